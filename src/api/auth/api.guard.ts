import { type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import { AuthorizationError } from '../../domain/errors';
import type { ApiRequest } from '../request-context';
import type { TenantRateLimiter } from '../limits/rate-limiter';
import type { Authenticator } from './authenticator';
import { PUBLIC_KEY, SCOPE_KEY } from './decorators';

/**
 * Global guard, in order: authenticate (401), per-tenant request rate (429), the route's one
 * required scope (403). A route without a declared scope is refused: the guard fails closed.
 */
export class ApiGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: Authenticator,
    private readonly limiter: TenantRateLimiter,
  ) {}

  canActivate(ctx: ExecutionContext): boolean {
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets)) return true;
    const req = ctx.switchToHttp().getRequest<ApiRequest>();
    const principal = this.authenticator.authenticate(req);
    req.principal = principal;
    this.limiter.take(principal.tenantId);
    const scope = this.reflector.getAllAndOverride<string | undefined>(SCOPE_KEY, targets);
    if (!scope) throw new AuthorizationError('this route declares no scope', {});
    if (!principal.scopes.has(scope))
      throw new AuthorizationError(`this request needs the scope "${scope}"`, { requiredScope: scope });
    return true;
  }
}
