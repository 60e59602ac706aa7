import type { Transport } from '../transport';
import type { CreatedUser, CreateUser, User } from '../types';
import type { RequestOptions } from './request-options';

/**
 * Users (`/v1/users`). Creating and listing users needs an admin key (anyone may create plain users
 * when the server runs with `open_registration`).
 *
 * @example
 * ```ts
 * const { user, api_key } = await client.users.create({ name: 'alice' });
 * console.log(`${user.name}: ${api_key.key}`); // the key is shown only this once
 * ```
 */
export class UsersApi {
  constructor(private readonly t: Transport) {}

  /** Creates a user and its first API key. */
  create(body: CreateUser, options: RequestOptions = {}): Promise<CreatedUser> {
    return this.t.call(this.t.api.POST('/v1/users', { body, signal: options.signal }), options.signal);
  }

  /** Every user (admin). */
  list(options: RequestOptions = {}): Promise<User[]> {
    return this.t.call(this.t.api.GET('/v1/users', { signal: options.signal }), options.signal);
  }

  /** The user the API key belongs to: also the way to check that a key works. */
  me(options: RequestOptions = {}): Promise<User> {
    return this.t.call(this.t.api.GET('/v1/users/me', { signal: options.signal }), options.signal);
  }
}
