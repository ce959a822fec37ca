import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type TracingHandle } from '../../../src/adapters/telemetry/otel-tracing';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

/**
 * Plan §19 at the HTTP edge, through the real SDK and a real HTTP server: every request is a SERVER
 * span that continues the client's W3C traceparent, and the events a request writes carry its trace
 * id — so a caller can follow its own trace into the session's log.
 */
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const traceparent = (trace: string, span: string) => `00-${trace}-${span}-01`;

let tdb: TestDb;
let h: ApiHarness;
let tracing: TracingHandle;
const exporter = new InMemorySpanExporter();

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'agent-core-test', exporter });
  tdb = await createTestDb();
  h = await startApi(tdb.url);
});
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  await tracing?.shutdown();
});

const ask = (text: string) => ({ content: [{ type: 'text', text }] });

async function eventTraces(sessionId: string): Promise<{ type: string; traceId: string | null }[]> {
  const r = await h.t.platform.db.query<{ event_type: string; trace_id: string | null }>(
    'SELECT event_type, trace_id FROM events WHERE session_id = $1 ORDER BY sequence',
    [sessionId],
  );
  return r.rows.map((x) => ({ type: x.event_type, traceId: x.trace_id }));
}

/** The server span of the request that answered with this X-Request-Id (ended when the response finished). */
async function serverSpanOf(requestId: string | null): Promise<ReadableSpan> {
  for (let i = 0; i < 50; i++) {
    const span = exporter.getFinishedSpans().find((s) => s.attributes['http.request.id'] === requestId);
    if (span) return span;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no server span for request ${requestId}`);
}

describe('HTTP request spans and the trace ids of API-written events (plan §19)', () => {
  it("continues the client's traceparent: the request's span is its child and every event the request writes carries its trace id", async () => {
    const s = await call(h.base, 'POST', '/v1/sessions?note=not-recorded', {
      body: {},
      headers: { traceparent: traceparent(TRACE, CLIENT_SPAN) },
    });
    expect(s.status).toBe(201);
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('What is 2 + 2?'),
      headers: { traceparent: traceparent(TRACE, 'a1b2c3d4e5f60718') },
    });
    expect(m.status).toBe(202);

    const created = await serverSpanOf(s.headers.get('x-request-id'));
    expect(created.kind).toBe(SpanKind.SERVER);
    expect(created.spanContext().traceId).toBe(TRACE);
    expect(created.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    expect(created.attributes).toEqual({
      'http.request.method': 'POST',
      'url.path': '/v1/sessions', // never the query string
      'http.request.id': s.headers.get('x-request-id'),
      'http.response.status_code': 201,
    });
    const submitted = await serverSpanOf(m.headers.get('x-request-id'));
    expect(submitted.spanContext().traceId).toBe(TRACE);
    expect(submitted.parentSpanContext?.spanId).toBe('a1b2c3d4e5f60718');
    expect(submitted.attributes['http.response.status_code']).toBe(202);

    expect(await eventTraces(s.body.id)).toEqual([
      { type: 'session.created', traceId: TRACE },
      { type: 'session.title.changed', traceId: TRACE },
      { type: 'user.message.created', traceId: TRACE },
      { type: 'run.queued', traceId: TRACE },
    ]);
  });

  it('starts a fresh trace per request without (or with a malformed) traceparent, and cancellation is traced too', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: { traceparent: 'not-a-traceparent' } });
    expect(s.status).toBe(201);
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask('hello') });
    expect(m.status).toBe(202);
    const c = await call(h.base, 'POST', `/v1/runs/${m.body.run_id}/cancel`, { body: {} });
    expect(c.status).toBeLessThan(300);

    const spans = await Promise.all([s, m, c].map((r) => serverSpanOf(r.headers.get('x-request-id'))));
    for (const span of spans) expect(span.parentSpanContext).toBeUndefined();
    const [createTrace, submitTrace, cancelTrace] = spans.map((x) => x.spanContext().traceId);
    expect(new Set([createTrace, submitTrace, cancelTrace, TRACE]).size).toBe(4);
    expect(await eventTraces(s.body.id)).toEqual([
      { type: 'session.created', traceId: createTrace },
      { type: 'session.title.changed', traceId: submitTrace },
      { type: 'user.message.created', traceId: submitTrace },
      { type: 'run.queued', traceId: submitTrace },
      { type: 'run.cancelled', traceId: cancelTrace },
    ]);
  });

  it('marks a refused request with its status code and writes nothing', async () => {
    const before = await h.eventCount();
    const r = await call(h.base, 'POST', '/v1/sessions/00000000-0000-4000-8000-000000000000/messages', {
      body: ask('hello'),
      headers: { traceparent: traceparent(TRACE, CLIENT_SPAN) },
    });
    expect(r.status).toBe(404);
    const span = await serverSpanOf(r.headers.get('x-request-id'));
    expect(span.spanContext().traceId).toBe(TRACE);
    expect(span.attributes['http.response.status_code']).toBe(404);
    expect(await h.eventCount()).toBe(before);
  });
});
