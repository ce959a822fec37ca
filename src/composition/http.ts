import 'reflect-metadata';
import { NestFactory, Reflector } from '@nestjs/core';
import { ShutdownSignal, type INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { AgentErrorFilter } from '../api/agent-error.filter';
import { ApiGuard } from '../api/auth/api.guard';
import { Authenticator } from '../api/auth/authenticator';
import { TOOL_USE_SCOPE } from '../api/auth/scopes';
import { answerClientErrorsWithEnvelope } from '../api/client-errors';
import { bodyParsing, jsonParserOptions, unstorableTextCheck } from '../api/body-parsing';
import { TenantRateLimiter } from '../api/limits/rate-limiter';
import { requestIdMiddleware } from '../api/request-context';
import { requestSpanMiddleware } from '../api/request-span';
import { apiValidationPipe } from '../api/validation';
import { dashboardMiddleware } from '../dashboard/serve';
import { AppModule } from './app.module';
import { writeMetrics } from './telemetry';
import type { Platform } from './platform';

export { addTokenToFile } from '../api/auth/token-file';
export { expiryFrom, listTokens, revokeToken } from '../api/auth/token-admin';
export { API_SCOPES, USER_PRESET } from '../api/auth/scopes';

/** Scopes the builtin tools require: part of the `user` token preset. */
export function builtinToolScopes(platform: Pick<Platform, 'registry'>): string[] {
  return [...new Set([TOOL_USE_SCOPE, ...platform.registry.list().flatMap((t) => t.spec.requiredScopes)])];
}

/**
 * Builds the HTTP application on a platform; the caller decides where it listens. In token mode it
 * refuses (ConfigurationError) to build without a readable AUTH_TOKENS_FILE. `auth` replaces the
 * settings' AUTH_MODE and AUTH_TOKENS_FILE (the eval harness's own API, which serves its principal).
 */
export async function createHttpApp(
  platform: Platform,
  opts: { auth?: { mode: 'token'; tokensFile: string } } = {},
): Promise<INestApplication> {
  const s = platform.settings;
  const log = platform.log;
  const auth = opts.auth ?? { mode: s.authMode, tokensFile: s.authTokensFile };
  const authenticator = new Authenticator(
    { mode: auth.mode, tokensFile: auth.tokensFile, toolScopes: builtinToolScopes(platform) },
    log,
  );
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forPlatform(platform, { http: true }), {
    logger: false,
    abortOnError: false,
    bodyParser: false,
  });
  app.disable('x-powered-by');
  answerClientErrorsWithEnvelope(app.getHttpServer());
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
  app.use(unstorableTextCheck(log));
  app.useGlobalFilters(new AgentErrorFilter(log));
  app.useGlobalPipes(apiValidationPipe());
  app.useGlobalGuards(new ApiGuard(app.get(Reflector), authenticator, new TenantRateLimiter(s.apiRateLimitPerMinute)));
  const document = openApiDocument(app);
  app.getHttpAdapter().get('/openapi.json', (_req: unknown, res: { json(body: unknown): void }) => res.json(document));
  // Prometheus text (plan §19): unauthenticated like /health; no ids in any label (docs/operations.md).
  app
    .getHttpAdapter()
    .get('/metrics', (_req: unknown, res: Parameters<typeof writeMetrics>[1]) => writeMetrics(platform.metrics, res));
  // Every shutdown signal but SIGHUP, which re-reads AUTH_TOKENS_FILE instead (ADR 0032).
  app.enableShutdownHooks(Object.values(ShutdownSignal).filter((sig) => sig !== ShutdownSignal.SIGHUP));
  reloadTokensOnSighup(app, authenticator);
  return app;
}

/**
 * SIGHUP re-reads AUTH_TOKENS_FILE (ADR 0032) — and no longer ends the process, which is SIGHUP's
 * default. The listener goes when the app closes, so apps built and closed in one process (tests,
 * the eval harness) leave none behind.
 */
function reloadTokensOnSighup(app: INestApplication, authenticator: Authenticator): void {
  const onHup = () => authenticator.reload('SIGHUP');
  process.on('SIGHUP', onHup);
  const close = app.close.bind(app);
  app.close = async () => {
    process.off('SIGHUP', onHup);
    await close();
  };
}

/**
 * `GET /openapi.json`, generated from the controllers (their `ApiSuccess`/`ApiErrors` and the
 * guard's responses of `RequireScope`). The server is relative: the document describes the API
 * that serves it, wherever that listens. Routes without a bearer requirement are the public ones
 * (`Public()`: health), said explicitly with an empty requirement list.
 */
export function openApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('agent-core')
    .setDescription(
      'The /v1 HTTP API: sessions, runs, approvals and SSE event streams. Errors: {"error": {"code", "message", "details", "request_id"}}.',
    )
    .setVersion('0.1.0')
    .setLicense('UNLICENSED', 'https://docs.npmjs.com/cli/configuring-npm/package-json#license')
    .addServer('/')
    .addBearerAuth()
    .build();
  const document = SwaggerModule.createDocument(app, config);
  for (const item of Object.values(document.paths))
    for (const op of Object.values(item as Record<string, { security?: unknown[] }>))
      if (typeof op === 'object' && op !== null && !Array.isArray(op) && op.security === undefined) op.security = [];
  return document;
}
