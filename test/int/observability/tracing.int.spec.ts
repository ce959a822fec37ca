import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type TracingHandle } from '../../../src/adapters/telemetry/otel-tracing';
import { findSecret } from '../../../src/domain/events/secret-scan';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Worker } from '../../../src/runtime/worker';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

/**
 * Plan §19 spans through the real SDK with an in-memory exporter: the calculator run's whole span
 * tree with its attributes, nothing sensitive in any attribute, trace ids in the events, and one
 * trace for a run resumed by another worker after a crash.
 */
const PLANTED_KEY = 'sk-proj-PLANTEDabcdefghijklmnopqrstuvwxyz0123456789';
const QUESTION = 'What is 17 multiplied by 23?';

let tdb: TestDb;
let t: TestPlatform;
let tracing: TracingHandle;
const exporter = new InMemorySpanExporter();
const savedKey = process.env.OPENAI_API_KEY;

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'agent-core-test', exporter });
  // A configured provider key must never surface in a span, whatever the run does.
  process.env.OPENAI_API_KEY = PLANTED_KEY;
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 3, pollIntervalMs: 100 });
});
afterAll(async () => {
  await t?.close();
  await tdb?.drop();
  await tracing?.shutdown();
  if (savedKey === undefined) delete process.env.OPENAI_API_KEY;
  else process.env.OPENAI_API_KEY = savedKey;
});

async function runToEnd(runId: string, workerId: string): Promise<void> {
  const worker = t.platform.createWorker({
    workerId,
    concurrency: 1,
    pollIntervalMs: 100,
    drainMs: 0,
    onlyRunId: runId,
  });
  await worker.start();
  try {
    await t.waitForTerminal(runId, 30_000);
  } finally {
    await worker.stop();
  }
}

const spansOfTrace = (traceId: string) =>
  exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const runSpans = (runId: string) =>
  exporter.getFinishedSpans().filter((s) => s.name === 'agent.run' && s.attributes['run.id'] === runId);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('tracing (plan §19)', () => {
  let runId: string;
  let root: ReadableSpan;
  let spans: ReadableSpan[];
  let events: StoredEvent[];

  beforeAll(async () => {
    ({ runId } = await t.submit(QUESTION));
    await runToEnd(runId, 'trace-worker-1');
    [root] = runSpans(runId);
    spans = spansOfTrace(root.spanContext().traceId);
    events = await t.events(runId);
  });

  it('records the whole span tree of the calculator run under agent.run', () => {
    expect(runSpans(runId)).toHaveLength(1);
    expect(parentOf(root)).toBeUndefined(); // the run's first attempt is the trace root
    const byName = (n: string) => spans.filter((s) => s.name === n);
    const rootId = root.spanContext().spanId;
    for (const name of ['context.build', 'model.invoke', 'policy.evaluate', 'tool.execute', 'checkpoint.save'])
      for (const s of byName(name)) expect(parentOf(s)).toBe(rootId);
    expect(byName('context.build')).toHaveLength(2); // two model calls: the tool call, then the answer
    expect(byName('model.invoke')).toHaveLength(2);
    expect(byName('model.stream')).toHaveLength(2);
    const invokeIds = new Set(byName('model.invoke').map((s) => s.spanContext().spanId));
    for (const s of byName('model.stream')) expect(invokeIds.has(parentOf(s)!)).toBe(true);
    expect(byName('policy.evaluate')).toHaveLength(1);
    expect(byName('tool.execute')).toHaveLength(1);
    // One checkpoint: the step's, which supersedes the response's in the same commit; the terminal
    // write has none (ADR 0057).
    expect(byName('checkpoint.save').map((s) => s.attributes['checkpoint.phase'])).toEqual(['tools_completed']);
    for (const s of spans) expect(s.ended).toBe(true);
  });

  it('carries the listed attributes', () => {
    expect(root.attributes).toMatchObject({
      'run.id': runId,
      'session.id': events[0].sessionId,
      'tenant.id': events[0].tenantId,
      'agent.id': 'general',
      'run.status': 'completed',
      'run.step_count': 2,
      'run.attempt': 1,
    });
    expect(root.attributes['agent.version']).toEqual(expect.any(Number));
    expect(root.attributes['usage.input_tokens']).toBeGreaterThan(0);
    expect(root.attributes['usage.output_tokens']).toBeGreaterThan(0);
    const invokes = spans.filter((s) => s.name === 'model.invoke');
    expect(invokes.map((s) => s.attributes['model.stop_reason'])).toEqual(['tool_use', 'end_turn']);
    for (const s of invokes) {
      expect(s.attributes).toMatchObject({ 'model.provider': 'demo', 'model.name': 'demo' });
      expect(s.attributes['usage.input_tokens']).toBeGreaterThan(0);
      expect(s.attributes['usage.output_tokens']).toBeGreaterThan(0);
    }
    const tool = spans.find((s) => s.name === 'tool.execute')!;
    expect(tool.attributes).toMatchObject({ 'tool.name': 'math.calculate', 'tool.status': 'succeeded' });
    expect(tool.attributes['tool.version']).toEqual(expect.any(String));
    const policy = spans.find((s) => s.name === 'policy.evaluate')!;
    expect(policy.attributes).toMatchObject({
      'tool.name': 'math.calculate',
      'policy.decision': 'allow',
      'approval.required': false,
    });
  });

  it('puts no message text, tool arguments or results, and no API key in any attribute', () => {
    const all = exporter
      .getFinishedSpans()
      .flatMap((s) => [
        s.name,
        ...Object.entries(s.attributes).flatMap(([k, v]) => [k, String(v)]),
        ...s.events.flatMap((e) => [e.name, ...Object.values(e.attributes ?? {}).map(String)]),
      ]);
    expect(all.length).toBeGreaterThan(50);
    for (const text of all) {
      expect(text).not.toContain('17 multiplied by 23');
      expect(text).not.toContain('What is');
      expect(text).not.toContain('17 * 23');
      expect(text).not.toContain('The result is');
      expect(text).not.toContain(PLANTED_KEY);
      expect(text).not.toContain('PLANTED');
      expect(findSecret(text)).toBeUndefined();
    }
  });

  it('carries the trace id into the events: the envelope of worker events and run.started', () => {
    const traceId = root.spanContext().traceId;
    const started = events.find((e) => e.type === 'run.started')!;
    expect(started.data).toMatchObject({ traceId, spanId: root.spanContext().spanId });
    const workerEvents = events.filter((e) => e.actorType === 'worker');
    expect(workerEvents.length).toBeGreaterThan(5);
    for (const e of workerEvents) expect([e.type, e.traceId]).toEqual([e.type, traceId]);
    // Events written by the API (the user's message, the queueing) precede any trace.
    expect(events.find((e) => e.type === 'user.message.created')!.traceId).toBeNull();
  });

  it('continues the same trace when another worker resumes a crashed run', async () => {
    const { runId: crashed } = await t.submit(QUESTION, { modelPolicy: 'fake:slow_calculator' });
    const first: Worker = t.platform.createWorker({
      workerId: 'trace-worker-crashing',
      concurrency: 1,
      pollIntervalMs: 100,
      drainMs: 0,
      onlyRunId: crashed,
    });
    await first.start();
    for (let i = 0; i < 400; i++) {
      if ((await t.events(crashed)).some((e) => e.type === 'tool.call.completed')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await first.crash(); // no further write: its lease expires and another worker reclaims the run
    await runToEnd(crashed, 'trace-worker-2');

    const claims = (await t.events(crashed)).filter((e) => e.type === 'run.claimed');
    expect(claims.map((e) => e.actorId)).toEqual(['trace-worker-crashing', 'trace-worker-2']);
    const attempts = runSpans(crashed).sort(
      (a, b) => Number(a.attributes['run.attempt']) - Number(b.attributes['run.attempt']),
    );
    expect(attempts).toHaveLength(2);
    const [a1, a2] = attempts;
    expect(a2.spanContext().traceId).toBe(a1.spanContext().traceId);
    expect(parentOf(a1)).toBeUndefined();
    expect(parentOf(a2)).toBe(a1.spanContext().spanId);
    expect(a2.links.map((l) => l.context.spanId)).toEqual([a1.spanContext().spanId]);
    expect(a2.attributes).toMatchObject({ 'run.resumed': true, 'run.recovered': true, 'run.status': 'completed' });
    const started = (await t.events(crashed)).filter((e) => e.type === 'run.started');
    expect(started).toHaveLength(2);
    for (const e of started)
      expect(e.data).toMatchObject({ traceId: a1.spanContext().traceId, spanId: a1.spanContext().spanId });
    // The second worker's spans (tool loop continued, final answer) are in the same trace.
    const resumedChildren = spansOfTrace(a1.spanContext().traceId).filter(
      (s) => parentOf(s) === a2.spanContext().spanId,
    );
    // (The resumed lease saves no checkpoint: its one write is the terminal one, ADR 0057.)
    expect(resumedChildren.map((s) => s.name)).toEqual(expect.arrayContaining(['context.build', 'model.invoke']));
  });
});
