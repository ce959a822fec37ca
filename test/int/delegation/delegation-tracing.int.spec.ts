import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing, type TracingHandle } from '../../../src/adapters/telemetry/otel-tracing';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

/** Plan §27.6: each child run has its own trace, linked to the span of the parent that delegated. */
let tdb: TestDb;
let t: TestPlatform;
let tracing: TracingHandle;
const exporter = new InMemorySpanExporter();

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'agent-core-test', exporter });
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 5, pollIntervalMs: 100, delegationEnabled: true });
});
afterAll(async () => {
  await t?.close();
  await tdb?.drop();
  await tracing?.shutdown();
});

it("gives each child run its own trace, whose agent.run span links to the parent's span and names the parent", async () => {
  const { runId } = await t.submit('delegate: what is 2 plus 2; what is 3 times 3');
  // The CLI's kind of worker: restricted to the run, it claims the run's children and joins them.
  const worker = t.platform.createWorker({ concurrency: 3, pollIntervalMs: 100, drainMs: 0, onlyRunId: runId });
  await worker.start();
  try {
    expect(await t.waitForTerminal(runId, 30_000)).toBe('completed');
  } finally {
    await worker.stop();
  }
  const spans = exporter.getFinishedSpans().filter((s) => s.name === 'agent.run');
  const parentSpans = spans.filter((s) => s.attributes['run.id'] === runId);
  const parentTrace = parentSpans[0].spanContext().traceId;
  expect(new Set(parentSpans.map((s) => s.spanContext().traceId))).toEqual(new Set([parentTrace]));
  const kids = await t.platform.childRunStore.childrenOf(runId, null);
  expect(kids).toHaveLength(2);
  const parentSpanIds = new Set(
    exporter
      .getFinishedSpans()
      .filter((s) => s.spanContext().traceId === parentTrace)
      .map((s) => s.spanContext().spanId),
  );
  for (const k of kids) {
    const [span] = spans.filter((s) => s.attributes['run.id'] === k.runId);
    expect(span.spanContext().traceId).not.toBe(parentTrace);
    expect(span.attributes['run.parent_id']).toBe(runId);
    const link = span.links.find((l) => l.attributes?.['link.kind'] === 'delegated_by');
    expect(link?.context.traceId).toBe(parentTrace);
    expect(parentSpanIds.has(link!.context.spanId)).toBe(true);
  }
});
