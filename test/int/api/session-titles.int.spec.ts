import { Client } from 'pg';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, readSse, startApi, type ApiHarness } from './api-harness';

let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, {}, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

const ask = (text: string) => ({ content: [{ type: 'text', text }] });

async function sessionEvents(id: string): Promise<{ type: string; payload: Record<string, unknown> }[]> {
  const c = new Client({ connectionString: tdb.url });
  await c.connect();
  try {
    const r = await c.query(`SELECT event_type AS type, payload FROM events WHERE session_id = $1 ORDER BY sequence`, [
      id,
    ]);
    return r.rows;
  } finally {
    await c.end();
  }
}

async function converse(text: string, title?: string): Promise<string> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: title ? { title } : {} });
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask(text) });
  expect(m.status).toBe(202);
  const frames = await readSse(`${h.base}/v1/runs/${m.body.run_id}/events`);
  expect(frames.filter((f) => f.id !== undefined).pop()?.event).toBe('run.completed');
  return s.body.id;
}

const titles = async (q: string) => {
  const r = await call(h.base, 'GET', `/v1/sessions?q=${encodeURIComponent(q)}`);
  expect(r.status).toBe(200);
  return (r.body.items as { id: string }[]).map((s) => s.id).sort();
};

describe('session titles and search (issue 26 item 7)', () => {
  it('titles a session from its first message, once; a session created with a title keeps it', async () => {
    const id = await converse('What is 17 multiplied by 23?\nShow your working.');
    expect((await call(h.base, 'GET', `/v1/sessions/${id}`)).body.title).toBe('What is 17 multiplied by 23?');
    const changes = (await sessionEvents(id)).filter((e) => e.type === 'session.title.changed');
    expect(changes.map((e) => e.payload)).toEqual([{ title: 'What is 17 multiplied by 23?', source: 'first_message' }]);

    const named = await converse('What is 2 plus 2?', 'Arithmetic homework');
    expect((await call(h.base, 'GET', `/v1/sessions/${named}`)).body.title).toBe('Arithmetic homework');
    expect((await sessionEvents(named)).some((e) => e.type === 'session.title.changed')).toBe(false);
  });

  it('PATCH renames; bad input is a clear 400/404 and changes nothing', async () => {
    const id = await converse('What is 6 multiplied by 7?');
    const before = await sessionEvents(id);
    const renamed = await call(h.base, 'PATCH', `/v1/sessions/${id}`, { body: { title: '  Quarterly report  ' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id, title: 'Quarterly report' });
    expect((await call(h.base, 'GET', `/v1/sessions/${id}`)).body.title).toBe('Quarterly report');
    const after = await sessionEvents(id);
    expect(after.slice(before.length)).toEqual([
      { type: 'session.title.changed', payload: { title: 'Quarterly report', source: 'user' } },
    ]);

    for (const body of [{ title: '' }, { title: '   ' }, { title: 'x'.repeat(501) }, {}, { title: 7 }]) {
      const r = await call(h.base, 'PATCH', `/v1/sessions/${id}`, { body });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('validation_error');
      expect(r.body.error.message).toMatch(/title/);
    }
    const missing = await call(h.base, 'PATCH', `/v1/sessions/00000000-0000-4000-8000-00000000abcd`, {
      body: { title: 'x' },
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    const same = await call(h.base, 'PATCH', `/v1/sessions/${id}`, { body: { title: 'Quarterly report' } });
    expect(same.status).toBe(200);
    expect(await sessionEvents(id)).toHaveLength(after.length);
    expect((await call(h.base, 'GET', `/v1/sessions/${id}`)).body.title).toBe('Quarterly report');
  });

  it('searches titles and message text with full-text search, by word prefix, through the GIN indexes', async () => {
    const zebra = await converse('What is 12 multiplied by 12? asking for a zebrafish');
    const named = await converse('What is 3 plus 4?', 'Budget of the xylophone club');
    await call(h.base, 'PATCH', `/v1/sessions/${named}`, { body: { title: 'Budget of the xylophone orchestra' } });

    expect(await titles('zebrafish')).toEqual([zebra]);
    expect(await titles('ZEBRA')).toEqual([zebra]); // prefix, any case
    expect(await titles('xylophone orch')).toEqual([named]); // every word, in the title
    expect(await titles('xylophone club')).toEqual([]); // the old title no longer matches
    expect(await titles('144')).toEqual([zebra]); // the assistant's answer is searched too
    expect(await titles('nothingmatchesthis')).toEqual([]);
    expect(await titles('!!! & |')).toEqual([]); // no words: nothing, and no tsquery syntax error
    expect((await call(h.base, 'GET', `/v1/sessions?q=${'a'.repeat(201)}`)).status).toBe(400);

    const c = new Client({ connectionString: tdb.url });
    await c.connect();
    try {
      // Small tables make a scan cheapest; forbid it to see the plan the indexes give.
      await c.query('SET enable_seqscan = off');
      const plan = await c.query(
        `EXPLAIN SELECT e.session_id FROM events e
          WHERE e.event_type IN ('user.message.created', 'assistant.message.completed')
            AND to_tsvector('simple'::regconfig, session_message_text(e.event_type, e.payload)) @@ to_tsquery('simple', 'zebra:*')
         UNION SELECT t.id FROM sessions t
          WHERE to_tsvector('simple'::regconfig, coalesce(t.title, '')) @@ to_tsquery('simple', 'zebra:*')`,
      );
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toContain('events_message_search_idx');
      expect(text).toContain('sessions_title_search_idx');
    } finally {
      await c.end();
    }
  });
});
