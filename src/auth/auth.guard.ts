import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AUTH_MODE, AuthMode, AuthenticatedRequest } from './auth.decorators';
import { AuthService } from './auth.service';

interface RequestLike extends AuthenticatedRequest {
  headers: Record<string, string | string[] | undefined>;
  ip: string;
}

/** Global guard: every route needs `Authorization: Bearer otk_…` unless marked otherwise. */
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
    const header = request.headers.authorization;
    if (mode === 'optional' && header === undefined) return true;
    request.principal = await this.auth.authenticate(Array.isArray(header) ? header[0] : header, request.ip);
    return true;
  }
}
