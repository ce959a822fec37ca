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

describe('the /v1 API in dev mode', () => {
  it('runs the calculator flow: 201 session, 202 run, a run stream to run.completed, and 391 from GET /v1/runs/{id}', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    expect(s.status).toBe(201);
    expect(s.body).toEqual({
      id: expect.any(String),
      status: 'active',
      agent_id: 'general',
      agent_version: expect.any(Number),
    });
    expect(s.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('What is 17 multiplied by 23?'),
    });
    expect(m.status).toBe(202);
    expect(m.body).toEqual({ run_id: expect.any(String), status: 'queued' });
    const frames = await readSse(`${h.base}/v1/runs/${m.body.run_id}/events`);
    const persisted = frames.filter((f) => f.id !== undefined);
    expect(persisted.map((f) => f.event)).toContain('tool.call.completed');
    expect(persisted[persisted.length - 1].event).toBe('run.completed');
    const seqs = persisted.map((f) => Number(f.id));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(persisted[0].data).toMatchObject({
      type: persisted[0].event,
      sequence: seqs[0],
      run_id: m.body.run_id,
      created_at: expect.any(String),
      payload: expect.any(Object),
    });
    const run = await call(h.base, 'GET', `/v1/runs/${m.body.run_id}`);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ id: m.body.run_id, status: 'completed', tool_call_count: 1, model_call_count: 2 });
    expect(run.body.final_text).toContain('391');
    expect(run.body.usage).toEqual(
      expect.objectContaining({ uncached_input_tokens: expect.any(Number), output_tokens: expect.any(Number) }),
    );

    const msgs = await call(h.base, 'GET', `/v1/sessions/${s.body.id}/messages`);
    expect(msgs.status).toBe(200);
    expect(msgs.body.items.map((x: { role: string }) => x.role)).toEqual(['user', 'assistant']);
    expect(msgs.body.items[0].content).toEqual([{ type: 'text', text: 'What is 17 multiplied by 23?' }]);

    const got = await call(h.base, 'GET', `/v1/sessions/${s.body.id}`);
    expect(got.body).toMatchObject({ id: s.body.id, active_run_id: null, last_run_id: m.body.run_id });
  });

  it('replays a finished run after Last-Event-ID, from the header or the query string, and ends the stream', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask('What is 2 plus 3?') });
    const all = (await readSse(`${h.base}/v1/runs/${m.body.run_id}/events`)).filter((f) => f.id);
    const cut = all[2].id!;
    const viaHeader = (
      await readSse(`${h.base}/v1/runs/${m.body.run_id}/events`, { headers: { 'last-event-id': cut } })
    ).filter((f) => f.id);
    const viaQuery = (await readSse(`${h.base}/v1/runs/${m.body.run_id}/events?last_event_id=${cut}`)).filter(
      (f) => f.id,
    );
    expect(viaHeader.map((f) => f.id)).toEqual(all.slice(3).map((f) => f.id));
    expect(viaQuery.map((f) => f.id)).toEqual(all.slice(3).map((f) => f.id));
  });

  it('returns the original run for a repeated Idempotency-Key and 409 for the same key with another body', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const headers = { 'idempotency-key': `k-${s.body.id}` };
    const before = await h.runCount();
    const a = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('What is 6 times 7?'),
      headers,
    });
    const b = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('What is 6 times 7?'),
      headers,
    });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.run_id).toBe(a.body.run_id);
    expect(await h.runCount()).toBe(before + 1);
    const c = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('something else'),
      headers,
    });
    expect(c.status).toBe(409);
    expect(c.body.error.code).toBe('conflict');
    expect(await h.runCount()).toBe(before + 1);
  });

  it('lists sessions newest first with keyset pages, and deletes a session (409 while its run is active, then 204 twice)', async () => {
    // Let earlier runs finish, then stop the worker: nothing else moves a session's updated_at.
    const active = async () =>
      Number(
        (
          await h.t.platform.db.query<{ n: string }>(
            `SELECT count(*)::text AS n FROM runs WHERE status NOT IN ('completed','failed','cancelled')`,
          )
        ).rows[0].n,
      );
    for (let i = 0; i < 200 && (await active()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    await h.worker!.stop();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await call(h.base, 'POST', '/v1/sessions', { body: { title: `t${i}` } })).body.id);
    const all = (await call(h.base, 'GET', '/v1/sessions?limit=200')).body.items.map((x: { id: string }) => x.id);
    expect(all.filter((id: string) => ids.includes(id))).toEqual([ids[2], ids[1], ids[0]]);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const p = await call(
        h.base,
        'GET',
        `/v1/sessions?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(p.status).toBe(200);
      expect(p.body.items.length).toBeLessThanOrEqual(2);
      paged.push(...p.body.items.map((x: { id: string }) => x.id));
      cursor = p.body.next_cursor;
    } while (cursor);
    expect(paged).toEqual(all);

    const slow = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const m = await call(h.base, 'POST', `/v1/sessions/${slow.body.id}/messages`, { body: ask('What is 1 plus 1?') });
    const blocked = await call(h.base, 'DELETE', `/v1/sessions/${slow.body.id}`);
    expect(blocked.status).toBe(409);
    expect(blocked.body.error).toMatchObject({ code: 'invalid_state_transition', details: { run_id: m.body.run_id } });
    const busy = await call(h.base, 'POST', `/v1/sessions/${slow.body.id}/messages`, { body: ask('again') });
    expect(busy.status).toBe(409);
    expect(busy.body.error.details.active_run_id).toBe(m.body.run_id);
    expect((await call(h.base, 'POST', `/v1/runs/${m.body.run_id}/cancel`)).status).toBe(200);
    expect((await call(h.base, 'DELETE', `/v1/sessions/${slow.body.id}`)).status).toBe(204);
    expect((await call(h.base, 'DELETE', `/v1/sessions/${slow.body.id}`)).status).toBe(204);
    expect((await call(h.base, 'GET', `/v1/sessions/${slow.body.id}`)).status).toBe(404);
  });

  it('serves health and an OpenAPI document generated from the controllers', async () => {
    expect((await call(h.base, 'GET', '/health/live')).body).toEqual({ status: 'ok' });
    expect((await call(h.base, 'GET', '/health/ready')).status).toBe(200);
    const doc = await call(h.base, 'GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sessions',
        '/v1/sessions/{id}/messages',
        '/v1/runs/{id}/events',
        '/v1/approvals/{id}/resolve',
      ]),
    );
  });
});
