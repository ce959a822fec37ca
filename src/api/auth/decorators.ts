import { applyDecorators, createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import { ApiBearerAuth } from '@nestjs/swagger';
import { AuthenticationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { ApiRequest } from '../request-context';
import { ApiErrors } from '../openapi';
import type { RouteScope } from './scopes';

export const SCOPE_KEY = 'agent:required-scope';
export const PUBLIC_KEY = 'agent:public';

/**
 * The one scope a route requires (matched exactly). It also documents what the guard answers on
 * such a route — 401 without credentials, 429 over the tenant's rate, 403 without the scope — and
 * the 500 any route may answer, so no authenticated route can be added without them.
 */
export const RequireScope = (scope: RouteScope) =>
  applyDecorators(SetMetadata(SCOPE_KEY, scope), ApiBearerAuth(), ApiErrors(401, 403, 429, 500));
/** Health and the OpenAPI document: no authentication. */
export const Public = () => SetMetadata(PUBLIC_KEY, true);

/** The authenticated principal (set by ApiGuard). */
export const Auth = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const p = ctx.switchToHttp().getRequest<ApiRequest>().principal;
  if (!p) throw new AuthenticationError('not authenticated', {});
  return p;
});
