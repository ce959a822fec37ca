import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { otlpEndpointFrom, startTracing } from '../adapters/telemetry/otel-tracing';
import { processPromMetrics } from '../adapters/telemetry/prom-metrics';
import { ConfigurationError } from '../domain/errors';
import type { Logger } from '../ports/logger';
import type { ExposedMetrics } from '../ports/metrics';

/**
 * Telemetry wiring of the composition root (plan §19, ADR 0015): the process-wide Prometheus
 * registry, and the OpenTelemetry SDK only when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set and OTEL_SDK_DISABLED is not `true`. Without it no
 * SDK is loaded into the tracer registry and `@opentelemetry/api` stays its no-op.
 */
export interface Telemetry {
  readonly metrics: ExposedMetrics;
  /** The OpenTelemetry SDK this call installed, or null (tracing off, or installed by someone else). */
  readonly tracing: { shutdown(): Promise<void> } | null;
}

export function setupTelemetry(service: string, env: NodeJS.ProcessEnv, log: Logger): Telemetry {
  const metrics = processPromMetrics();
  const endpoint = otlpEndpointFrom(env);
  if (!endpoint || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { metrics, tracing: null };
  const tracing = startTracing({
    serviceName: env.OTEL_SERVICE_NAME?.trim() || `agent-core-${service}`,
    otlpEndpoint: endpoint,
  });
  log.info('tracing on: exporting spans over OTLP/HTTP', { endpoint: redactUrl(endpoint) });
  return { metrics, tracing };
}

/** Credentials in an endpoint URL never reach the logs. */
function redactUrl(u: string): string {
  try {
    const url = new URL(u);
    url.username = '';
    url.password = '';
    url.search = '';
    return url.toString();
  } catch {
    return '[unparseable]';
  }
}

/** The worker's metrics port: WORKER_METRICS_PORT (default 9464; 0 turns it off). */
export function workerMetricsPort(env: NodeJS.ProcessEnv): number {
  const raw = env.WORKER_METRICS_PORT?.trim();
  if (raw === undefined || raw === '') return 9464;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new ConfigurationError(`WORKER_METRICS_PORT must be an integer 0..65535, got "${raw}"`, {
      name: 'WORKER_METRICS_PORT',
    });
  return n;
}

/** Sends the Prometheus text exposition (the API's `GET /metrics` and the worker's server). */
export async function writeMetrics(
  metrics: ExposedMetrics,
  res: { setHeader(k: string, v: string): unknown; end(body: string): unknown; statusCode: number },
): Promise<void> {
  try {
    const body = await metrics.render();
    res.statusCode = 200;
    res.setHeader('content-type', metrics.contentType);
    res.setHeader('cache-control', 'no-store');
    res.end(body);
  } catch {
    res.statusCode = 500;
    res.setHeader('content-type', 'text/plain; charset=utf-8');
    res.end('metrics unavailable\n');
  }
}

/**
 * A worker process's own `GET /metrics` (and `GET /health/live`) on `port` — separate from the API
 * because `agent start` runs them as separate processes. Unauthenticated like the API's /metrics
 * (docs/operations.md). A port already in use is logged, not fatal: the worker still runs.
 */
export async function startWorkerMetricsServer(
  metrics: ExposedMetrics,
  opts: { host: string; port: number },
  log: Logger,
): Promise<{ port: number; close(): Promise<void> } | null> {
  if (opts.port === 0) return null;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') return void writeMetrics(metrics, res);
    if (req.method === 'GET' && path === '/health/live') {
      res.setHeader('content-type', 'application/json');
      return void res.end('{"status":"ok"}');
    }
    res.statusCode = 404;
    res.setHeader('content-type', 'text/plain; charset=utf-8');
    res.end('not found\n');
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, opts.host, () => resolve());
    });
  } catch (e) {
    log.warn('worker metrics server not started', {
      host: opts.host,
      port: opts.port,
      error: e instanceof Error ? e.message : String(e),
    });
    return null;
  }
  const port = (server.address() as AddressInfo).port;
  log.info('worker metrics listening', { url: `http://${opts.host}:${port}/metrics` });
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The trace viewer template (OTEL_TRACE_UI_URL): an http(s) URL; `{trace_id}` is replaced by the id. */
export function traceUiUrlFrom(env: NodeJS.ProcessEnv): string | null {
  const raw = env.OTEL_TRACE_UI_URL?.trim();
  if (!raw) return null;
  if (!/^https?:\/\//i.test(raw))
    throw new ConfigurationError(`OTEL_TRACE_UI_URL must be an http(s) URL, got "${raw}"`, {
      name: 'OTEL_TRACE_UI_URL',
    });
  return raw;
}
