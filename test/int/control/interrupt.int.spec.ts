import { createTestDb, type TestDb } from '../../support/test-db';
import { expectRunEventRanges } from '../../support/run-event-ranges';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import { SubmitMessageCommand } from '../../../src/application/runs/submit-message';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { rebuildProjections } from '../../../src/adapters/postgres/projection-rebuild';

/**
 * Issue 33, `multitask_strategy: interrupt`: the working run stops at its next safe point (after the
 * model call in flight, before any tool or further call), ends `interrupted` with its partial work in
 * the log and a synthetic result for the call it left open, and the new run starts with that
 * history. A real worker, real HTTP, a real PostgreSQL; every model call takes 1.5 s.
 */
let tdb: TestDb;
let h: ApiHarness;
beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, { fakeModelLatencyMs: 1500 }, { worker: true });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
});

const TERMINAL = ['completed', 'failed', 'cancelled', 'interrupted'];

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const status = async (runId: string) => (await h.t.platform.runs.get(runId, null))?.status;
const ended = (runId: string) =>
  waitFor(`run ${runId} to end`, async () => TERMINAL.includes((await status(runId)) ?? '') && (await status(runId)));
const sessionEvents = (sessionId: string): Promise<StoredEvent[]> =>
  h.t.platform.store.listAfter(sessionId, 0, LOCAL_PRINCIPAL);

const submit = (sessionId: string, text: string, modelPolicy: string, strategy: 'interrupt' | 'rollback' | null) =>
  h.t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, sessionId, text, null, { modelPolicy }, strategy));

/** Starts A and waits until its first model call is in flight. */
async function runningA(modelPolicy: string) {
  const s = await h.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
  const a = await submit(s.id, 'write two files for me', modelPolicy, null);
  await waitFor('A’s first model call', async () =>
    (await sessionEvents(s.id)).some((e) => e.runId === a.runId && e.type === 'model.request.started'),
  );
  return { sessionId: s.id, a };
}

/** What A did after the interrupt was requested: the sequence of the request, and A's later events. */
function afterRequest(events: StoredEvent[], runId: string) {
  const at = events.find((e) => e.type === 'run.interrupt_requested' && e.runId === runId)!.sequence;
  return events.filter((e) => e.runId === runId && e.sequence > at).map((e) => e.type);
}

describe('interrupt: a second message stops the working run at its next safe point', () => {
  it('A (tools with effects) ends interrupted within the step; no tool of A starts after the request; B completes seeing A’s partial work', async () => {
    const { sessionId, a } = await runningA('fake:two_workspace_writes');
    const b = await submit(sessionId, 'stop, do this instead', 'fake:interrupt_followup', 'interrupt');
    expect(b.position).toBe(1);
    expect(await ended(a.runId)).toBe('interrupted');
    expect(await ended(b.runId)).toBe('completed');

    const events = await sessionEvents(sessionId);
    const later = afterRequest(events, a.runId);
    expect(later).not.toContain('tool.call.started');
    expect(later).not.toContain('model.request.started');
    // The model call in flight finished (its response is kept); the call it proposed never ran.
    expect(later).toEqual(
      expect.arrayContaining(['model.response.completed', 'tool.call.proposed', 'tool.call.failed', 'run.interrupted']),
    );
    const failed = events.find((e) => e.runId === a.runId && e.type === 'tool.call.failed')!;
    expect(failed.data).toMatchObject({
      errorCode: 'run_interrupted',
      message: expect.stringMatching(/NOT performed/),
    });
    expect(events.filter((e) => e.runId === a.runId && e.type === 'tool.call.started')).toEqual([]);
    // Every call A proposed has an outcome: nothing dangles.
    const proposed = events.filter((e) => e.runId === a.runId && e.type === 'tool.call.proposed');
    const outcomes = new Set(
      events
        .filter((e) => e.runId === a.runId && /^tool\.call\.(completed|failed|denied)$/.test(e.type))
        .map((e) => (e.data as { invocationId: string }).invocationId),
    );
    for (const p of proposed) expect(outcomes.has((p.data as { invocationId: string }).invocationId)).toBe(true);
    const runA = (await call(h.base, 'GET', `/v1/runs/${a.runId}`)).body;
    expect(runA).toMatchObject({ status: 'interrupted' });
    const sess = (await call(h.base, 'GET', `/v1/sessions/${sessionId}`)).body;
    expect(sess).toMatchObject({ active_run_id: null, queued_run_ids: [], last_run_id: b.runId });
  }, 120_000);

  it('rollback: A ends interrupted and rolled back; B starts without A’s work (A’s message stays), and the log keeps it', async () => {
    const { sessionId, a } = await runningA('fake:two_workspace_writes');
    const b = await submit(sessionId, 'scrap that, do this instead', 'fake:rollback_followup', 'rollback');
    expect(await ended(a.runId)).toBe('interrupted');
    // rollback_followup fails the call unless B's request has A's message and none of A's work.
    expect(await ended(b.runId)).toBe('completed');
    const events = await sessionEvents(sessionId);
    const ofA = events.filter((e) => e.runId === a.runId).map((e) => e.type);
    expect(ofA.slice(-2)).toEqual(['run.rolled_back', 'run.interrupted']);
    expect(ofA).toEqual(expect.arrayContaining(['model.response.completed', 'tool.call.proposed']));
    expect(events.find((e) => e.type === 'run.rolled_back')?.data).toEqual({ byRunId: b.runId, reason: null });
    expect((await call(h.base, 'GET', `/v1/runs/${a.runId}`)).body).toMatchObject({ status: 'interrupted' });
  }, 120_000);

  it('a pure computation A proposed while the request was on its way does not run either (the worker hears of it at once)', async () => {
    const { sessionId, a } = await runningA('fake:calculator_then_answer');
    const b = await submit(sessionId, 'never mind', 'fake:interrupt_followup', 'interrupt');
    expect(await ended(a.runId)).toBe('interrupted');
    expect(await ended(b.runId)).toBe('completed');
    const later = afterRequest(await sessionEvents(sessionId), a.runId);
    expect(later).not.toContain('tool.call.started');
    expect(later).not.toContain('model.request.started');
  }, 120_000);

  it('a run waiting for the user ends interrupted at once over HTTP; its question gets a synthetic answer and the new run completes', async () => {
    const s = await h.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const a = await submit(s.id, 'pick a region', 'fake:ask_user_question', null);
    await waitFor('A to wait for the user', async () => (await status(a.runId)) === 'waiting_for_user');
    const r = await call(h.base, 'POST', `/v1/sessions/${s.id}/messages`, {
      body: { content: [{ type: 'text', text: 'forget it, tell me a joke' }], multitask_strategy: 'interrupt' },
    });
    expect(r.status).toBe(202);
    expect(r.body.run_id).not.toBe(a.runId);
    // Ended in the same append as the message: no worker held it.
    expect(await status(a.runId)).toBe('interrupted');
    expect(await ended(r.body.run_id)).toBe('completed');
    const events = await sessionEvents(s.id);
    const answer = events.find((e) => e.runId === a.runId && e.type === 'tool.call.failed');
    expect(answer?.data).toMatchObject({ errorCode: 'run_interrupted', message: expect.stringMatching(/question/) });
  }, 120_000);

  it('without the strategy, text for a run waiting for the user is still its answer (plan §27.3)', async () => {
    const s = await h.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const a = await submit(s.id, 'pick a region', 'fake:ask_user_question', null);
    await waitFor('A to wait for the user', async () => (await status(a.runId)) === 'waiting_for_user');
    const r = await call(h.base, 'POST', `/v1/sessions/${s.id}/messages`, {
      body: { content: [{ type: 'text', text: 'eu-west' }] },
    });
    expect(r.body.run_id).toBe(a.runId);
    expect(await ended(a.runId)).toBe('completed');
  }, 120_000);

  it('interrupt on an idle session is a plain submit', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const r = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages?multitask_strategy=interrupt`, {
      body: { content: [{ type: 'text', text: 'hello' }] },
    });
    expect(r.body).toEqual({ run_id: r.body.run_id, status: 'queued' });
    expect(await ended(r.body.run_id)).toBe('completed');
    const events = await sessionEvents(s.body.id);
    expect(events.some((e) => e.type === 'run.interrupt_requested' || e.type === 'run.interrupted')).toBe(false);
  }, 60_000);
});

describe('the read models rebuild from these events', () => {
  it('a verifying rebuild finds the queues, interrupts and interrupted runs the live projections hold', async () => {
    // An enqueued pair too, so the session queue's hand-over is in the log.
    const s = await h.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const a = await submit(s.id, 'hello', 'fake:direct_answer', null);
    const b = await h.t.commands.execute(
      new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, 'next', null, { modelPolicy: 'fake:direct_answer' }, 'enqueue'),
    );
    await ended(a.runId);
    await ended(b.runId);
    const report = await rebuildProjections(h.t.platform.db, { verify: true });
    for (const p of report.projections) {
      expect({ name: p.name, differingRows: p.differingRows, differences: p.differences }).toEqual({
        name: p.name,
        differingRows: 0,
        differences: [],
      });
    }
    expect(report.projections.map((p) => p.name)).toEqual(expect.arrayContaining(['runs', 'sessions']));
  }, 120_000);

  it('reads every run’s events from its session range exactly as the log holds them (ADR 0054)', async () => {
    expect(await expectRunEventRanges(h.t.platform.db, h.t.platform.store)).toBeGreaterThan(0);
  });
});
