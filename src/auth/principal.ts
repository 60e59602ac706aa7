import type { Role } from './user.entity';

/** Who is calling: attached to the request by the auth guard. */
export interface Principal {
  userId: string;
  name: string;
  role: Role;
  keyId: string;
}

export const isAdmin = (p: Principal): boolean => p.role === 'admin';
