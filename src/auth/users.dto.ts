import { z } from 'zod';
import { iso } from '../core/columns';
import type { ApiKeyEntity } from './api-key.entity';
import type { UserEntity } from './user.entity';

const Role = z.enum(['user', 'admin']);

export const CreateUserDto = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]{2,64}$/, { message: 'name must be 2–64 letters, digits, dots, dashes or underscores' })
      .describe('Unique; letters, digits, dot, dash, underscore')
      .meta({ example: 'alice' }),
    role: Role.default('user'),
  })
  .strict()
  .meta({ id: 'CreateUserDto' });
export type CreateUserDto = z.output<typeof CreateUserDto>;

export const CreateKeyDto = z
  .object({ name: z.string().min(1).max(100).describe('A label to tell keys apart').meta({ example: 'laptop' }) })
  .strict()
  .meta({ id: 'CreateKeyDto' });
export type CreateKeyDto = z.output<typeof CreateKeyDto>;

export const UserDto = z.object({ id: z.uuid(), name: z.string(), role: Role, created_at: z.iso.datetime() }).meta({ id: 'UserDto' });
export type UserDto = z.output<typeof UserDto>;

export function userDto(u: UserEntity): UserDto {
  return { id: u.id, name: u.name, role: u.role, created_at: iso(u.createdAt)! };
}

const apiKeyShape = {
  id: z.uuid(),
  name: z.string(),
  prefix: z.string().describe('The non-secret start of the key: `otk_` and its key id (`otk_…` for a key an operator chose)').meta({ example: 'otk_3fA9x2LqB7kM' }),
  created_at: z.iso.datetime(),
  last_used_at: z.iso.datetime().nullable(),
  revoked_at: z.iso.datetime().nullable(),
};

export const ApiKeyDto = z.object(apiKeyShape).meta({ id: 'ApiKeyDto' });
export type ApiKeyDto = z.output<typeof ApiKeyDto>;

export function apiKeyDto(k: ApiKeyEntity): ApiKeyDto {
  return { id: k.id, name: k.name, prefix: k.prefix, created_at: iso(k.createdAt)!, last_used_at: iso(k.lastUsedAt), revoked_at: iso(k.revokedAt) };
}

export const IssuedKeyDto = z
  .object({ ...apiKeyShape, key: z.string().describe('The secret key. Shown once: store it now. The Tinker SDK takes it as `tml-` + the key.').meta({ example: 'otk_…' }) })
  .meta({ id: 'IssuedKeyDto' });
export type IssuedKeyDto = z.output<typeof IssuedKeyDto>;

export const CreatedUserDto = z.object({ user: UserDto, api_key: IssuedKeyDto }).meta({ id: 'CreatedUserDto' });
export type CreatedUserDto = z.output<typeof CreatedUserDto>;
