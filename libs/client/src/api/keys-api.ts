import type { Transport } from '../transport';
import type { ApiKey, IssuedKey } from '../types';
import type { RequestOptions } from './request-options';

/**
 * The calling user's API keys (`/v1/keys`).
 *
 * @example
 * ```ts
 * const issued = await client.keys.create({ name: 'laptop' }); // issued.key is shown only this once
 * await client.keys.revoke(issued.id);
 * ```
 */
export class KeysApi {
  constructor(private readonly t: Transport) {}

  /** Issues a new key; its secret (`key`) is in this answer only. */
  create(body: { name: string }, options: RequestOptions = {}): Promise<IssuedKey> {
    return this.t.call(this.t.api.POST('/v1/keys', { body, signal: options.signal }), options.signal);
  }

  /** The caller's keys, without secrets. */
  list(options: RequestOptions = {}): Promise<ApiKey[]> {
    return this.t.call(this.t.api.GET('/v1/keys', { signal: options.signal }), options.signal);
  }

  /** Revokes a key: requests with it fail from now on. */
  revoke(id: string, options: RequestOptions = {}): Promise<ApiKey> {
    return this.t.call(this.t.api.DELETE('/v1/keys/{id}', { params: { path: { id } }, signal: options.signal }), options.signal);
  }
}
