import { PgObservabilityQueries } from '../adapters/postgres/pg-observability-queries';
import type { Database } from '../adapters/postgres/database';
import { otlpEndpointFrom } from '../adapters/telemetry/otel-tracing';
import {
  OBSERVABILITY_READ_MODEL,
  OBSERVABILITY_SETTINGS,
  type ObservabilitySettings,
} from '../api/observability.controller';
import { traceUiUrlFrom } from './telemetry';

/** The Nest providers of the API's observability routes. */
export function observabilityProviders(db: Database, env: NodeJS.ProcessEnv) {
  const settings: ObservabilitySettings = {
    traceUiUrl: traceUiUrlFrom(env),
    tracingEnabled: otlpEndpointFrom(env) !== null && env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true',
  };
  return [
    { provide: OBSERVABILITY_READ_MODEL, useValue: new PgObservabilityQueries(db) },
    { provide: OBSERVABILITY_SETTINGS, useValue: settings },
  ];
}
