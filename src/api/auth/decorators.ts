import { createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import { AuthenticationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { ApiRequest } from '../request-context';
import type { RouteScope } from './scopes';

export const SCOPE_KEY = 'agent:required-scope';
export const PUBLIC_KEY = 'agent:public';

/** The one scope a route requires (matched exactly). */
export const RequireScope = (scope: RouteScope) => SetMetadata(SCOPE_KEY, scope);
/** Health and the OpenAPI document: no authentication. */
export const Public = () => SetMetadata(PUBLIC_KEY, true);

/** The authenticated principal (set by ApiGuard). */
export const Auth = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const p = ctx.switchToHttp().getRequest<ApiRequest>().principal;
  if (!p) throw new AuthenticationError('not authenticated', {});
  return p;
});
