import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, readSse, startApi, type ApiHarness } from './api-harness';

let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, { sseHeartbeatSeconds: 1, fakeModelLatencyMs: 400 }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

const ask = (text: string) => ({ content: [{ type: 'text', text }] });
const TERMINAL = (f: { event?: string }) => f.event === 'run.completed' || f.event === 'run.failed';

describe('live SSE streams', () => {
  it('streams a session live with id-less transient deltas and comment heartbeats, each persisted event once', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const streaming = readSse(`${h.base}/v1/sessions/${s.body.id}/events`, {
      until: (f) => f.some(TERMINAL) && f.some((x) => x.comment === 'heartbeat'),
      timeoutMs: 30_000,
    });
    await new Promise((r) => setTimeout(r, 200));
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('What is 17 multiplied by 23?'),
    });
    const frames = await streaming;
    expect(frames[0].retry).toBe('1000');
    const persisted = frames.filter((f) => f.id !== undefined);
    const seqs = persisted.map((f) => Number(f.id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(persisted.at(-1)?.event).toBe('run.completed');
    const deltas = frames.filter((f) => f.event === 'text_delta');
    expect(deltas.length).toBeGreaterThan(0);
    expect(
      deltas.every((f) => f.id === undefined && f.data.run_id === m.body.run_id && typeof f.data.text === 'string'),
    ).toBe(true);
    expect(frames.some((f) => f.comment === 'heartbeat')).toBe(true);
    const stored = await h.t.platform.store.listAfter(s.body.id, 0, LOCAL_PRINCIPAL);
    expect(seqs).toEqual(stored.map((e) => e.sequence));
  });

  it('loses nothing when the process LISTEN connection is killed mid-run (it reconnects and re-reads the log)', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    let killed = false;
    const streaming = readSse(`${h.base}/v1/sessions/${s.body.id}/events`, {
      timeoutMs: 40_000,
      until: (f) => {
        if (!killed && f.some((x) => x.event === 'model.request.started')) {
          killed = true;
          void h.t.platform.db.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'agent-core-sse' AND datname = current_database()`,
          );
        }
        return f.some(TERMINAL);
      },
    });
    await new Promise((r) => setTimeout(r, 200));
    await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask('What is 6 times 7?') });
    const frames = await streaming;
    expect(killed).toBe(true);
    const seqs = frames.filter((f) => f.id !== undefined).map((f) => Number(f.id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(frames.filter((f) => f.id !== undefined).at(-1)?.event).toBe('run.completed');
  });

  it('shares one LISTEN connection among many clients of the API process', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const streams = Array.from({ length: 20 }, () =>
      readSse(`${h.base}/v1/sessions/${s.body.id}/events`, { until: (f) => f.some(TERMINAL), timeoutMs: 30_000 }),
    );
    await new Promise((r) => setTimeout(r, 300));
    const listens = await h.t.platform.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM pg_stat_activity WHERE application_name = 'agent-core-sse' AND datname = current_database()`,
    );
    expect(listens.rows[0].n).toBe('1');
    await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask('What is 2 plus 2?') });
    const all = await Promise.all(streams);
    const first = all[0].filter((f) => f.id).map((f) => f.id);
    expect(first.length).toBeGreaterThan(5);
    for (const frames of all) expect(frames.filter((f) => f.id).map((f) => f.id)).toEqual(first);
  });
});
