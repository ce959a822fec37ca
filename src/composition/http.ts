import 'reflect-metadata';
import { NestFactory, Reflector } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { AgentErrorFilter } from '../api/agent-error.filter';
import { ApiGuard } from '../api/auth/api.guard';
import { Authenticator } from '../api/auth/authenticator';
import { TOOL_USE_SCOPE } from '../api/auth/scopes';
import { bodyParsing, jsonParserOptions } from '../api/body-parsing';
import { TenantRateLimiter } from '../api/limits/rate-limiter';
import { requestIdMiddleware } from '../api/request-context';
import { requestSpanMiddleware } from '../api/request-span';
import { apiValidationPipe } from '../api/validation';
import { dashboardMiddleware } from '../dashboard/serve';
import { AppModule } from './app.module';
import { writeMetrics } from './telemetry';
import type { Platform } from './platform';

export { addTokenToFile } from '../api/auth/token-file';
export { API_SCOPES, USER_PRESET } from '../api/auth/scopes';

/** Scopes the builtin tools require: part of the `user` token preset. */
export function builtinToolScopes(platform: Pick<Platform, 'registry'>): string[] {
  return [...new Set([TOOL_USE_SCOPE, ...platform.registry.list().flatMap((t) => t.spec.requiredScopes)])];
}

/**
 * Builds the HTTP application on a platform; the caller decides where it listens. In token mode it
 * refuses (ConfigurationError) to build without a readable AUTH_TOKENS_FILE.
 */
export async function createHttpApp(platform: Platform): Promise<INestApplication> {
  const s = platform.settings;
  const log = platform.log;
  const authenticator = new Authenticator(
    { mode: s.authMode, tokensFile: s.authTokensFile, toolScopes: builtinToolScopes(platform) },
    log,
  );
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forPlatform(platform, { http: true }), {
    logger: false,
    abortOnError: false,
    bodyParser: false,
  });
  app.disable('x-powered-by');
  // Order matters: request id first (every response carries it), then the media type check, the
  // size-limited JSON parser and the translation of its errors into the envelope.
  app.use(requestIdMiddleware);
  // Then the request's span (continuing a client's traceparent), so every event it writes names its trace.
  app.use(requestSpanMiddleware);
  // The web dashboard (`/`, `/console`, `/sessions/{id}`, `/runs/{id}`, `/assets/*`): static, no auth —
  // the page itself calls /v1 with the user's credentials.
  app.use(dashboardMiddleware());
  const body = bodyParsing(s.apiBodyLimitBytes, log);
  app.use(body.before);
  app.useBodyParser('json', jsonParserOptions(s.apiBodyLimitBytes));
  app.use(body.after);
  app.useGlobalFilters(new AgentErrorFilter(log));
  app.useGlobalPipes(apiValidationPipe());
  app.useGlobalGuards(new ApiGuard(app.get(Reflector), authenticator, new TenantRateLimiter(s.apiRateLimitPerMinute)));
  const document = openApiDocument(app);
  app.getHttpAdapter().get('/openapi.json', (_req: unknown, res: { json(body: unknown): void }) => res.json(document));
  // Prometheus text (plan §19): unauthenticated like /health; no ids in any label (docs/operations.md).
  app
    .getHttpAdapter()
    .get('/metrics', (_req: unknown, res: Parameters<typeof writeMetrics>[1]) => writeMetrics(platform.metrics, res));
  app.enableShutdownHooks();
  return app;
}

function openApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('agent-core')
    .setDescription(
      'The /v1 HTTP API: sessions, runs, approvals and SSE event streams. Errors: {"error": {"code", "message", "details", "request_id"}}.',
    )
    .setVersion('0.1.0')
    .addBearerAuth()
    .build();
  return SwaggerModule.createDocument(app, config);
}
