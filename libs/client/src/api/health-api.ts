import type { Transport } from '../transport';
import type { Liveness, Readiness } from '../types';
import type { RequestOptions } from './request-options';

/**
 * Liveness and readiness (`/health`, `/health/ready`); no API key needed.
 *
 * @example
 * ```ts
 * const ready = await client.health.ready();
 * if (ready.status !== 'ok') console.log(ready.workers.detail);
 * ```
 */
export class HealthApi {
  constructor(private readonly t: Transport) {}

  /** Resolves when the server answers. */
  live(options: RequestOptions = {}): Promise<Liveness> {
    return this.t.call(this.t.api.GET('/health', { signal: options.signal }), options.signal);
  }

  /**
   * Whether the database, the queue and at least one worker are available. A server that is not
   * ready answers 503 with the same body; that body is returned, not thrown, and not retried.
   */
  async ready(options: RequestOptions = {}): Promise<Readiness> {
    const pending = this.t.api.GET('/health/ready', { signal: options.signal, fetch: this.t.onceFetch });
    let result: Awaited<typeof pending>;
    try {
      result = await pending;
    } catch (error) {
      return this.t.call(Promise.reject(error), options.signal);
    }
    if (result.response.status === 503 && result.error && typeof result.error === 'object') return result.error as Readiness;
    return this.t.call(Promise.resolve(result), options.signal);
  }
}
