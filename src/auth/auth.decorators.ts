import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Principal } from './principal';

export const AUTH_MODE = 'opentinker:auth-mode';
export type AuthMode = 'public' | 'optional';

/** The route needs no API key (health, metrics, docs). */
export const Public = () => SetMetadata(AUTH_MODE, 'public' satisfies AuthMode);
/** A key is used when sent (and must then be valid); the handler decides what anonymous callers may do. */
export const OptionalAuth = () => SetMetadata(AUTH_MODE, 'optional' satisfies AuthMode);

export interface AuthenticatedRequest {
  principal?: Principal;
}

export const CurrentUser = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal | undefined => ctx.switchToHttp().getRequest<AuthenticatedRequest>().principal);
