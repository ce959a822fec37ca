import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ApiRequest, ApiResponse } from './request-context';

type Next = (err?: unknown) => void;

/** Only these headers are read for trace context; anything else a client sends is ignored. */
const PROPAGATION_HEADERS = ['traceparent', 'tracestate'] as const;

/**
 * Second middleware (after the request id): one SERVER span per HTTP request (plan §19), continuing
 * the client's W3C `traceparent` when it sends one, so a caller's trace reaches the events its
 * request writes — `session.created`, `user.message.created`, `run.queued`, approvals and
 * cancellations carry the request's trace id in `events.trace_id`, as the worker's events carry the
 * run's. The request and response emitters are bound to the span's context, so handlers that run
 * after the body is read (a stream callback) are still inside it.
 *
 * Attributes are the method, the path without its query, the status code and the request id —
 * never headers, bodies or query strings (which can hold tokens). With no SDK registered
 * (OTEL_EXPORTER_OTLP_ENDPOINT unset) the tracer and propagator are the API's no-ops and this only
 * calls `next()`.
 */
export function requestSpanMiddleware(req: ApiRequest, res: ApiResponse, next: Next): void {
  const carrier: Record<string, string> = {};
  for (const h of PROPAGATION_HEADERS) {
    const v = req.headers[h];
    if (typeof v === 'string') carrier[h] = v;
  }
  const parent = propagation.extract(ROOT_CONTEXT, carrier);
  const path = req.url.split('?', 1)[0];
  const span = trace.getTracer('agent-core').startSpan(
    `${req.method} request`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': req.method,
        'url.path': path,
        ...(req.requestId ? { 'http.request.id': req.requestId } : {}),
      },
    },
    parent,
  );
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    span.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  res.on('finish', end);
  // A client that goes away before the response is finished (an SSE stream, mostly) ends it too.
  res.on('close', end);
  const ctx = trace.setSpan(parent, span);
  context.bind(ctx, req as unknown as NodeJS.EventEmitter);
  context.bind(ctx, res as unknown as NodeJS.EventEmitter);
  context.with(ctx, next);
}
