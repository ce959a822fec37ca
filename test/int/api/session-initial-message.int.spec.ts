import { createTestDb, type TestDb } from '../../support/test-db';
import { call, readSse, startApi, type ApiHarness } from './api-harness';

let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, { apiMaxActiveRunsPerTenant: 20 }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

const ask = (text: string) => ({ content: [{ type: 'text', text }] });
const sessionCount = async () =>
  Number((await h.t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM sessions')).rows[0].n);

describe('POST /v1/sessions with an initial message (ADR 0053)', () => {
  it('writes the session, its first message and its queued run in one transaction, and the run answers', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', {
      body: { title: 'Multiplication', message: ask('What is 17 multiplied by 23?') },
    });
    expect(s.status).toBe(201);
    expect(s.body).toEqual({
      id: expect.any(String),
      status: 'active',
      agent_id: 'general',
      agent_version: expect.any(Number),
      run_id: expect.any(String),
    });

    const frames = await readSse(`${h.base}/v1/runs/${s.body.run_id}/events`);
    expect(frames.filter((f) => f.id !== undefined).pop()?.event).toBe('run.completed');
    const run = await call(h.base, 'GET', `/v1/runs/${s.body.run_id}`);
    expect(run.body).toMatchObject({ id: s.body.run_id, session_id: s.body.id, status: 'completed' });
    expect(run.body.final_text).toBe('The result is 391.');

    const events = await h.t.platform.db.query<{ type: string; sequence: string; tx: string }>(
      'SELECT event_type AS type, sequence::text, transaction_id::text AS tx FROM events WHERE session_id = $1 ORDER BY events.sequence',
      [s.body.id],
    );
    const first = events.rows.slice(0, 3);
    expect(first.map((e) => [e.type, e.sequence])).toEqual([
      ['session.created', '1'],
      ['user.message.created', '2'],
      ['run.queued', '3'],
    ]);
    expect(new Set(first.map((e) => e.tx)).size).toBe(1);
    // The worker's claim is another transaction.
    expect(events.rows[3].type).toBe('run.claimed');
    expect(events.rows[3].tx).not.toBe(first[0].tx);

    const msgs = await call(h.base, 'GET', `/v1/sessions/${s.body.id}/messages`);
    expect(msgs.body.items.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    const got = await call(h.base, 'GET', `/v1/sessions/${s.body.id}`);
    expect(got.body).toMatchObject({ title: 'Multiplication', last_run_id: s.body.run_id, active_run_id: null });
  });

  it('titles an untitled session from its first message, in the same append', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: { message: ask('What is 2 plus 3?') } });
    expect(s.status).toBe(201);
    const events = await h.t.platform.db.query<{ type: string; tx: string }>(
      'SELECT event_type AS type, transaction_id::text AS tx FROM events WHERE session_id = $1 ORDER BY sequence LIMIT 4',
      [s.body.id],
    );
    expect(events.rows.map((e) => e.type)).toEqual([
      'session.created',
      'session.title.changed',
      'user.message.created',
      'run.queued',
    ]);
    expect(new Set(events.rows.map((e) => e.tx)).size).toBe(1);
    expect((await call(h.base, 'GET', `/v1/sessions/${s.body.id}`)).body.title).toBe('What is 2 plus 3?');
    // Its run ends before the next test counts rows.
    const frames = await readSse(`${h.base}/v1/runs/${s.body.run_id}/events`);
    expect(frames.filter((f) => f.id !== undefined).pop()?.event).toBe('run.completed');
  });

  it('answers a session without a message as before: no run_id', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    expect(s.status).toBe(201);
    expect(Object.keys(s.body).sort()).toEqual(['agent_id', 'agent_version', 'id', 'status']);
  });

  it.each([
    ['blank text', { message: ask('   ') }, 400, 'validation_error'],
    ['no content parts', { message: { content: [] } }, 400, 'validation_error'],
    ['a non-text part', { message: { content: [{ type: 'image', text: 'x' }] } }, 400, 'validation_error'],
    ['an unknown field in the message', { message: { ...ask('hi'), multitask_strategy: 'enqueue' } }, 400, null],
    ['a message that is not an object', { message: 'hi' }, 400, 'validation_error'],
    ['text over the limit', { message: ask('x'.repeat(32_001)) }, 400, 'validation_error'],
    ['an unknown agent', { agent_id: 'no-such-agent', message: ask('hi') }, 404, 'not_found'],
    ['a title over 500 characters', { title: 't'.repeat(501), message: ask('hi') }, 400, 'validation_error'],
  ])('refuses %s, typed, and writes nothing', async (_why, body, status, code) => {
    const before = [await h.eventCount(), await h.runCount(), await sessionCount()];
    const r = await call(h.base, 'POST', '/v1/sessions', { body });
    expect(r.status).toBe(status);
    expect(r.body.error.code).toEqual(code ?? expect.any(String));
    expect(r.body.error.request_id).toEqual(expect.any(String));
    expect([await h.eventCount(), await h.runCount(), await sessionCount()]).toEqual(before);
  });
});

describe('POST /v1/sessions with a message at the active-run ceiling', () => {
  it('is refused with 429 and writes nothing', async () => {
    // Its own database: the worker above would claim the run that holds the slot.
    const own = await createTestDb();
    const tight = await startApi(own.url, { apiMaxActiveRunsPerTenant: 1 });
    try {
      // No worker here: the first run stays queued and holds the tenant's one active slot.
      const first = await call(tight.base, 'POST', '/v1/sessions', { body: { message: ask('What is 1 plus 1?') } });
      expect(first.status).toBe(201);
      const before = [await tight.eventCount(), await tight.runCount()];
      const r = await call(tight.base, 'POST', '/v1/sessions', { body: { message: ask('What is 2 plus 2?') } });
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('rate_limited');
      expect([await tight.eventCount(), await tight.runCount()]).toEqual(before);
    } finally {
      await tight.close();
      await own.drop();
    }
  });
});
