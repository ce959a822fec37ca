import { createTestDb, type TestDb } from '../../support/test-db';
import { expectRunEventRanges } from '../../support/run-event-ranges';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import { SubmitMessageCommand } from '../../../src/application/runs/submit-message';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';

/**
 * Issue 33, `multitask_strategy: enqueue`: a message sent while the session's run works is recorded
 * and its run waits behind that run (FIFO, visible as queued with a position), then starts with the
 * earlier run's answer in its history. A real worker, real HTTP, a real PostgreSQL.
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

const ask = (text: string, extra: Record<string, unknown> = {}) => ({
  content: [{ type: 'text', text }],
  ...extra,
});

async function waitForStatus(runId: string, statuses: readonly string[], timeoutMs = 60_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const run = await h.t.platform.runs.get(runId, null);
    if (run && statuses.includes(run.status)) return run.status;
    if (Date.now() > end) throw new Error(`run ${runId} still ${run?.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const submit = (sessionId: string, text: string, modelPolicy: string, strategy: 'enqueue' | null) =>
  h.t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, sessionId, text, null, { modelPolicy }, strategy));

describe('enqueue: a second message while a run works', () => {
  it('queues B and C behind A in order (positions 1 and 2); all complete in order and B sees A’s answer', async () => {
    const s = await h.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const a = await submit(s.id, 'hello', 'fake:direct_answer', null);
    expect(a.position).toBeNull();
    await waitForStatus(a.runId, ['running']);
    const b = await submit(s.id, 'can you see your answer?', 'fake:followup_sees_previous_answer', 'enqueue');
    const c = await submit(s.id, 'and a third', 'fake:direct_answer', 'enqueue');
    expect([b.position, c.position]).toEqual([1, 2]);

    // Visible through the API as queued, with its place, while A still works.
    const rb = await call(h.base, 'GET', `/v1/runs/${b.runId}`);
    expect(rb.body).toMatchObject({ status: 'queued', position: 1, queued_behind: a.runId });
    const rs = await call(h.base, 'GET', `/v1/sessions/${s.id}`);
    expect(rs.body).toMatchObject({ active_run_id: a.runId, queued_run_ids: [b.runId, c.runId] });

    for (const id of [a.runId, b.runId, c.runId]) await waitForStatus(id, ['completed', 'failed', 'cancelled']);
    const runs = await Promise.all([a, b, c].map((r) => h.t.platform.runs.get(r.runId, null)));
    // B completed: its fixture fails the call when A's answer is not in the request.
    expect(runs.map((r) => [r?.status, r?.failure?.message ?? null])).toEqual([
      ['completed', null],
      ['completed', null],
      ['completed', null],
    ]);
    const [ra, rb2, rc] = runs.map((r) => r!);
    expect(Date.parse(rb2.startedAt!)).toBeGreaterThanOrEqual(Date.parse(ra.completedAt!));
    expect(Date.parse(rc.startedAt!)).toBeGreaterThanOrEqual(Date.parse(rb2.completedAt!));
    const session = await call(h.base, 'GET', `/v1/sessions/${s.id}`);
    expect(session.body).toMatchObject({ active_run_id: null, queued_run_ids: [], last_run_id: c.runId });
  }, 120_000);

  it('the follow-up fixture fails a run whose history lacks that answer (so the check above has teeth)', async () => {
    const s = await h.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const alone = await submit(s.id, 'can you see your answer?', 'fake:followup_sees_previous_answer', null);
    expect(await waitForStatus(alone.runId, ['completed', 'failed'])).toBe('failed');
    expect((await h.t.platform.runs.get(alone.runId, null))?.failure?.message).toMatch(/must contain|Hello!/);
  }, 60_000);

  it('over HTTP: reject stays the default (409 naming the active run); enqueue by body or query answers 202 with a position', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const path = `/v1/sessions/${s.body.id}/messages`;
    const first = await call(h.base, 'POST', path, { body: ask('What is 17 multiplied by 23?') });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ run_id: first.body.run_id, status: 'queued' });

    const busy = await call(h.base, 'POST', path, { body: ask('again') });
    expect(busy.status).toBe(409);
    expect(busy.body.error.details.active_run_id).toBe(first.body.run_id);
    const rejected = await call(h.base, 'POST', `${path}?multitask_strategy=reject`, { body: ask('again') });
    expect(rejected.status).toBe(409);

    const second = await call(h.base, 'POST', path, { body: ask('then this', { multitask_strategy: 'enqueue' }) });
    expect(second.status).toBe(202);
    expect(second.body).toEqual({ run_id: second.body.run_id, status: 'queued', position: 1 });
    const third = await call(h.base, 'POST', `${path}?multitask_strategy=enqueue`, { body: ask('and this') });
    expect(third.body).toEqual({ run_id: third.body.run_id, status: 'queued', position: 2 });

    for (const id of [first.body.run_id, second.body.run_id, third.body.run_id])
      await waitForStatus(id, ['completed', 'failed', 'cancelled']);
    const statuses = await Promise.all(
      [first, second, third].map(async (r) => (await call(h.base, 'GET', `/v1/runs/${r.body.run_id}`)).body.status),
    );
    expect(statuses).toEqual(['completed', 'completed', 'completed']);
  }, 120_000);

  it('enqueue on an idle session is a plain submit: no position, claimable at once', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const r = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('hello', { multitask_strategy: 'enqueue' }),
    });
    expect(r.body).toEqual({ run_id: r.body.run_id, status: 'queued' });
    expect(await waitForStatus(r.body.run_id, ['completed', 'failed'])).toBe('completed');
  }, 60_000);

  it('a waiting run that is cancelled leaves the queue; the one behind it still runs after the active one', async () => {
    const s = await h.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    const a = await submit(s.id, 'hello', 'fake:direct_answer', null);
    const b = await submit(s.id, 'second', 'fake:direct_answer', 'enqueue');
    const c = await submit(s.id, 'third', 'fake:followup_sees_previous_answer', 'enqueue');
    const cancel = await call(h.base, 'POST', `/v1/runs/${b.runId}/cancel`);
    expect(cancel.body).toMatchObject({ status: 'cancelled' });
    expect((await call(h.base, 'GET', `/v1/runs/${c.runId}`)).body).toMatchObject({ status: 'queued', position: 1 });
    expect(await waitForStatus(c.runId, ['completed', 'failed'])).toBe('completed');
    expect((await h.t.platform.runs.get(a.runId, null))?.status).toBe('completed');
  }, 120_000);
});

describe('bad input: nothing is changed', () => {
  it.each([
    ['an unknown strategy in the body', '', { multitask_strategy: 'shout' }],
    ['an unknown strategy in the query string', '?multitask_strategy=later', {}],
    ['a strategy that is not a string', '', { multitask_strategy: 3 }],
    ['body and query string that disagree', '?multitask_strategy=reject', { multitask_strategy: 'enqueue' }],
  ])('%s is a 400 naming multitask_strategy', async (_label, qs, extra) => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const before = await h.eventCount();
    const r = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages${qs}`, { body: ask('hi', extra) });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('validation_error');
    expect(r.body.error.message).toMatch(/multitask_strategy/);
    expect(await h.eventCount()).toBe(before);
  });

  it('reads every run’s events from its session range exactly as the log holds them (ADR 0054)', async () => {
    expect(await expectRunEventRanges(h.t.platform.db, h.t.platform.store)).toBeGreaterThan(0);
  });
});
