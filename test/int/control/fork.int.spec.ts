import { createTestDb, type TestDb } from '../../support/test-db';
import { expectRunEventRanges } from '../../support/run-event-ranges';
import { call, readSse, startApi, type ApiHarness, type WireBody } from '../api/api-harness';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { rebuildProjections } from '../../../src/adapters/postgres/projection-rebuild';
import { ForkAwareHistory } from '../../../src/context/fork-history';

/**
 * Issue 33, fork: `POST /v1/sessions/{id}/fork` makes a new session whose history is the parent's
 * log up to a sequence, by reference (`session.forked`; the fork's own stream continues the
 * prefix's sequences). A real worker, real HTTP, a real PostgreSQL, the demo model.
 */
let tdb: TestDb;
let h: ApiHarness;
beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, {}, { worker: true });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
});

const ask = (text: string) => ({ content: [{ type: 'text', text }] });
const QUESTIONS = Array.from({ length: 10 }, (_, i) => `What is ${i + 11} multiplied by ${i + 2}?`);

/** Runs one turn to its end over HTTP and returns the run's view. */
async function turn(sessionId: string, text: string): Promise<WireBody> {
  const m = await call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, { body: ask(text) });
  expect(m.status).toBe(202);
  return finished(m.body.run_id);
}

async function finished(runId: string): Promise<WireBody> {
  await readSse(`${h.base}/v1/runs/${runId}/events`);
  return (await call(h.base, 'GET', `/v1/runs/${runId}`)).body;
}

/** The session's own rows in `events`, exactly as stored. */
const rawLog = async (sessionId: string) =>
  (
    await h.t.platform.db.query<{ j: string }>(
      `SELECT to_jsonb(e)::text AS j FROM events e WHERE session_id = $1 ORDER BY sequence`,
      [sessionId],
    )
  ).rows.map((r) => r.j);

const messagesOf = async (sessionId: string) =>
  (await call(h.base, 'GET', `/v1/sessions/${sessionId}/messages?limit=200`)).body.items as WireBody[];
const textOf = (m: WireBody) => (m.content as { text: string }[])[0].text;

describe('fork: a new session from a point of another, by reference', () => {
  let parent: string;
  let parentMessages: WireBody[];

  beforeAll(async () => {
    parent = (await call(h.base, 'POST', '/v1/sessions', { body: {} })).body.id;
    for (const q of QUESTIONS) expect((await turn(parent, q)).status).toBe('completed');
    parentMessages = await messagesOf(parent);
  }, 120_000);

  it('edit and resend in the middle of a 10-turn session: a different answer, the parent byte-identical, both in the fork tree', async () => {
    const before = await rawLog(parent);
    const sixth = parentMessages.filter((m) => m.role === 'user')[5];
    expect(textOf(sixth)).toBe(QUESTIONS[5]);
    const f = await call(h.base, 'POST', `/v1/sessions/${parent}/fork`, {
      body: { at_sequence: sixth.sequence, message: ask('What is 12 multiplied by 12?') },
    });
    expect(f.status).toBe(201);
    expect(f.body).toEqual({
      id: expect.any(String),
      parent_session_id: parent,
      at_sequence: sixth.sequence,
      run_id: expect.any(String),
    });
    const run = await finished(f.body.run_id);
    expect(run.status).toBe('completed');
    expect(run.final_text).toContain('144');
    const original = parentMessages.find((m) => m.role === 'assistant' && m.run_id === sixth.run_id)!;
    expect(textOf(original)).toContain(String(16 * 7));
    expect(run.final_text).not.toEqual(textOf(original));

    // The fork's own stream continues the prefix: its first event follows the message it replaced.
    const own = await h.t.platform.store.listAfter(f.body.id, 0, LOCAL_PRINCIPAL);
    expect(own[0]).toMatchObject({
      type: 'session.forked',
      sequence: (sixth.sequence as number) - 1 + 1,
      data: { parentSessionId: parent, parentSequence: (sixth.sequence as number) - 1, atSequence: sixth.sequence },
    });
    // The transcript reads through the parent: five inherited turns, then the fork's own.
    const transcript = (await messagesOf(f.body.id)).map(textOf);
    expect(transcript.slice(0, 10).filter((_, i) => i % 2 === 0)).toEqual(QUESTIONS.slice(0, 5));
    expect(transcript[10]).toBe('What is 12 multiplied by 12?');
    expect(transcript).toHaveLength(12);
    expect(transcript.join('\n')).not.toContain(QUESTIONS[5]);

    expect(await rawLog(parent)).toEqual(before);
    const tree = (await call(h.base, 'GET', `/v1/sessions/${f.body.id}/tree`)).body.root as WireBody;
    expect(tree).toMatchObject({ id: parent, parent_session_id: null, forked_at_sequence: null });
    expect((tree.children as WireBody[]).map((c) => c.id)).toContain(f.body.id);
    const view = (await call(h.base, 'GET', `/v1/sessions/${f.body.id}`)).body;
    expect(view).toMatchObject({ parent_session_id: parent, forked_at_sequence: (sixth.sequence as number) - 1 });
  });

  it("the fork's model context holds the parent's turns up to the fork point and none after it", async () => {
    const third = parentMessages.filter((m) => m.role === 'assistant')[2];
    const f = await call(h.base, 'POST', `/v1/sessions/${parent}/fork`, { body: { at_sequence: third.sequence } });
    expect(f.status).toBe(201);
    expect(f.body.run_id).toBeUndefined();
    const next = await turn(f.body.id, 'What is 3 multiplied by 3?');
    expect(next.final_text).toContain('9');
    const history = await new ForkAwareHistory(h.t.platform.store).listAfter(f.body.id, 0, LOCAL_PRINCIPAL);
    const sequences = history.map((e) => e.sequence);
    expect(sequences).toEqual(sequences.map((_, i) => i + 1)); // one gapless log
    const texts = (await h.t.platform.context.history(f.body.id, LOCAL_PRINCIPAL)).units.map((u) => u.text);
    for (const q of QUESTIONS.slice(0, 3)) expect(texts).toContain(q);
    for (const q of QUESTIONS.slice(3)) expect(texts).not.toContain(q);
    expect(texts).toContain('What is 3 multiplied by 3?');
  });

  it('a fork of a fork reads through both; forking at the end is the default', async () => {
    const first = await call(h.base, 'POST', `/v1/sessions/${parent}/fork`, { body: {} });
    expect(first.status).toBe(201);
    const parentView = (await call(h.base, 'GET', `/v1/sessions/${parent}`)).body;
    expect(first.body.at_sequence).toBe(parentView.last_sequence);
    const firstUser = parentMessages.find((m) => m.role === 'user')!;
    // A sequence inside the first fork's inherited prefix: the message is found in the parent's stream.
    const second = await call(h.base, 'POST', `/v1/sessions/${first.body.id}/fork`, {
      body: { at_sequence: firstUser.sequence, message: ask('What is 5 multiplied by 5?') },
    });
    expect(second.status).toBe(201);
    const run = await finished(second.body.run_id);
    expect(run.final_text).toContain('25');
    const tree = (await call(h.base, 'GET', `/v1/sessions/${parent}/tree`)).body.root as WireBody;
    const child = (tree.children as WireBody[]).find((c) => c.id === first.body.id)!;
    expect((child.children as WireBody[]).map((c) => c.id)).toEqual([second.body.id]);
    expect((await messagesOf(second.body.id)).map(textOf)).toEqual(['What is 5 multiplied by 5?', run.final_text]);
  });

  it('refuses bad input with the field named and writes nothing', async () => {
    const count = async () =>
      Number((await h.t.platform.db.query<{ n: string }>(`SELECT count(*) AS n FROM events`)).rows[0].n);
    const before = await count();
    const last = (await call(h.base, 'GET', `/v1/sessions/${parent}`)).body.last_sequence as number;
    const beyond = await call(h.base, 'POST', `/v1/sessions/${parent}/fork`, { body: { at_sequence: last + 1 } });
    expect(beyond.status).toBe(404);
    expect(beyond.body.error).toMatchObject({ code: 'not_found', details: { field: 'at_sequence' } });
    const assistant = parentMessages.find((m) => m.role === 'assistant')!;
    const notUser = await call(h.base, 'POST', `/v1/sessions/${parent}/fork`, {
      body: { at_sequence: assistant.sequence, message: ask('hello') },
    });
    expect(notUser.status).toBe(400);
    expect(notUser.body.error.details).toMatchObject({ field: 'at_sequence' });
    for (const body of [{ at_sequence: 0 }, { at_sequence: 'x' }, { message: { content: [] } }, { extra: 1 }]) {
      const r = await call(h.base, 'POST', `/v1/sessions/${parent}/fork`, { body });
      expect({ body, status: r.status }).toEqual({ body, status: 400 });
    }
    const missing = await call(h.base, 'POST', `/v1/sessions/00000000-0000-4000-8000-000000000000/fork`, { body: {} });
    expect(missing.status).toBe(404);
    expect(await count()).toBe(before);
  });

  it('rebuilds the forks’ rows from the log with no difference', async () => {
    const forks = await h.t.platform.db.query(`SELECT id FROM sessions WHERE parent_session_id IS NOT NULL`);
    expect(forks.rows.length).toBeGreaterThanOrEqual(4);
    const report = await rebuildProjections(h.t.platform.db, { verify: true });
    for (const p of report.projections) {
      expect({ name: p.name, differingRows: p.differingRows, differences: p.differences }).toEqual({
        name: p.name,
        differingRows: 0,
        differences: [],
      });
    }
    expect(report.projections.map((p) => p.name)).toContain('sessions');
  });

  it('reads every run’s events from its session range exactly as the log holds them (ADR 0054)', async () => {
    expect(await expectRunEventRanges(h.t.platform.db, h.t.platform.store)).toBeGreaterThan(0);
  });
});
