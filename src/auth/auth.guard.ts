import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AUTH_MODE, AuthMode, AuthenticatedRequest } from './auth.decorators';
import { AuthService, presentedCredential, type CredentialHeaders } from './auth.service';

interface RequestLike extends AuthenticatedRequest {
  headers: CredentialHeaders;
  ip: string;
}

/** Global guard: every route needs a key (`Authorization: Bearer otk_…` or `X-API-Key: otk_…`) unless marked otherwise. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: AuthService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const mode = this.reflector.getAllAndOverride<AuthMode | undefined>(AUTH_MODE, [context.getHandler(), context.getClass()]);
    if (mode === 'public') return true;
    const request = context.switchToHttp().getRequest<RequestLike>();
    if (mode === 'optional' && presentedCredential(request.headers) === null) return true;
    request.principal = await this.auth.authenticate(request.headers, request.ip);
    return true;
  }
}
