import type { Transport } from '../transport';
import type { EnvironmentDetail, EnvironmentSummary } from '../types';
import type { RequestOptions } from './request-options';

/**
 * The environments the server loaded (`/v1/environments`), including third-party packages that
 * failed to load (`status: 'failed'`, with `error`).
 *
 * @example
 * ```ts
 * const loaded = (await client.environments.list()).filter((e) => e.status === 'loaded');
 * const math = await client.environments.get('math'); // config schema, defaults, task counts
 * ```
 */
export class EnvironmentsApi {
  constructor(private readonly t: Transport) {}

  list(options: RequestOptions = {}): Promise<EnvironmentSummary[]> {
    return this.t.call(this.t.api.GET('/v1/environments', { signal: options.signal }), options.signal);
  }

  /** One environment; an unknown id fails with `OT_ERR_NOT_FOUND`. */
  get(id: string, options: RequestOptions = {}): Promise<EnvironmentDetail> {
    return this.t.call(this.t.api.GET('/v1/environments/{id}', { params: { path: { id } }, signal: options.signal }), options.signal);
  }
}
