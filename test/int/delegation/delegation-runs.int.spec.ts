import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { createTestDb, type TestDb } from '../../support/test-db';
import { expectRunEventRanges } from '../../support/run-event-ranges';
import { call, startApi, type ApiHarness } from '../api/api-harness';

let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(
    tdb.url,
    { delegationEnabled: true, delegationSweepMs: 500, leaseSeconds: 3 },
    { worker: true, workerOptions: { concurrency: 6 } },
  );
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

const TERMINAL = ['completed', 'failed', 'cancelled'];

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const events = (runId: string) => h.t.platform.store.listRunEvents(runId, LOCAL_PRINCIPAL);
const run = (runId: string) => h.t.platform.runs.get(runId, null);
const children = (runId: string) => h.t.platform.childRunStore.childrenOf(runId, null);

async function submit(policy: string): Promise<{ runId: string; sessionId: string }> {
  return h.t.submit('go', { modelPolicy: policy });
}

function ofType<T extends StoredEvent['type']>(es: readonly StoredEvent[], type: T): StoredEvent<T>[] {
  return es.filter((e) => e.type === type) as unknown as StoredEvent<T>[];
}

describe('child runs (issue 32, ADR 0037)', () => {
  it("denies a child any tool outside its brief's subset, delegate.run included, while the parent may use it", async () => {
    const { runId } = await submit('fake:delegate_overreach');
    expect(await h.t.waitForTerminal(runId, 30_000)).toBe('completed');
    const [child] = await children(runId);
    expect(child.status).toBe('completed');
    const childEvents = await events(child.runId);
    const proposed = ofType(childEvents, 'tool.call.proposed').map((e) => e.data.toolName);
    expect(proposed).toEqual(['delegate.run', 'system.current_time']);
    const denied = ofType(childEvents, 'tool.call.denied');
    expect(denied.map((e) => e.data.reasonCode)).toEqual(['tool_not_in_brief', 'tool_not_in_brief']);
    expect(ofType(childEvents, 'tool.call.started')).toHaveLength(0);
    // The child was offered only its subset.
    const parentEvents = await events(runId);
    const clock = ofType(parentEvents, 'tool.call.completed').map((e) => e.data.result);
    expect(clock).toHaveLength(2);
    expect(ofType(parentEvents, 'tool.call.denied')).toHaveLength(0);
  });

  it('answers bad briefs with a tool validation error the model sees, and materializes nothing', async () => {
    const before = await h.runCount();
    const { runId } = await submit('fake:delegate_bad_briefs');
    expect(await h.t.waitForTerminal(runId, 30_000)).toBe('completed');
    expect(await h.runCount()).toBe(before + 1);
    const es = await events(runId);
    const failed = ofType(es, 'tool.call.failed');
    expect(failed.map((e) => e.data.errorCode)).toEqual(Array(4).fill('tool_validation_error'));
    expect(failed[0].data.message).toMatch(/objective/);
    expect(failed[1].data.message).toMatch(/weather.lookup, which is not one of the parent's tools/);
    expect(failed[2].data.message).toMatch(/asks for 500 model calls; the parent has \d+ left/);
    expect(failed[3].data.message).toMatch(/1 to 4 briefs; this call has 5/);
    expect(ofType(es, 'run.waiting_for_children')).toHaveLength(0);
    expect(await children(runId)).toEqual([]);
  });

  it("makes a failed child that brief's tool error, not the parent's failure", async () => {
    const { runId } = await submit('fake:delegate_child_fails');
    expect(await h.t.waitForTerminal(runId, 30_000)).toBe('completed');
    const [child] = await children(runId);
    expect(child.status).toBe('failed');
    const es = await events(runId);
    const joined = ofType(es, 'tool.call.completed')[0].data.result as {
      data: { results: { status: string; error: { code: string } }[] };
    };
    expect(joined.data.results).toEqual([
      expect.objectContaining({ status: 'failed', error: expect.objectContaining({ code: 'budget_exceeded' }) }),
    ]);
    expect(ofType(es, 'run.children_joined')[0].data.children).toEqual([
      expect.objectContaining({ runId: child.runId, status: 'failed' }),
    ]);
  });

  it('cancels both running children when the parent is cancelled, and writes nothing of them to its session', async () => {
    const { runId, sessionId } = await submit('fake:delegate_then_hang');
    await until(
      () => run(runId),
      (r) => r?.status === 'waiting_for_children',
      'the parent to wait',
    );
    const kids = await children(runId);
    expect(kids).toHaveLength(2);
    // Both children are at their hanging step-2 model call.
    for (const k of kids)
      await until(
        () => events(k.runId),
        (es) => ofType(es, 'model.request.started').some((e) => e.data.step === 2),
        `child ${k.runId} to run`,
      );
    const before = await h.t.platform.store.listAfter(sessionId, 0, LOCAL_PRINCIPAL);
    const cancel = await call(h.base, 'POST', `/v1/runs/${runId}/cancel`, { body: { reason: 'enough' } });
    expect(cancel.status).toBe(200);
    expect(cancel.body.status).toBe('cancelled');
    const ended = await until(
      () => children(runId),
      (cs) => cs.every((c) => TERMINAL.includes(c.status)),
      'the children to end',
    );
    expect(ended.map((c) => c.status)).toEqual(['cancelled', 'cancelled']);
    expect((await run(runId))!.status).toBe('cancelled');
    // Only the cancel reached the parent's session; the join never happened.
    await new Promise((r) => setTimeout(r, 700));
    const after = await h.t.platform.store.listAfter(sessionId, before.at(-1)!.sequence, LOCAL_PRINCIPAL);
    expect(after.map((e) => e.type)).toEqual(['run.cancelled']);
    expect(after.every((e) => e.runId === runId)).toBe(true);
  });

  it('reads every run’s events from its session range exactly as the log holds them (ADR 0054)', async () => {
    expect(await expectRunEventRanges(h.t.platform.db, h.t.platform.store)).toBeGreaterThan(0);
  });
});
