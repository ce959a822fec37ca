import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import { memoryStreamIdOf } from '../../../src/domain/memory/memory-stream';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * End-of-run formation, MEMORY_FORMATION=extractive (ADR 0043), through the real worker on the
 * embedded PostgreSQL: a run's user messages become memories after the run completes (durable facts
 * only, never a credential or a task detail), a later contradiction supersedes, and a formation
 * repeated after a worker died (its claim gone stale) records nothing twice.
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-memory-formation-'));
const file = path.join(dir, 'tokens.json');
let token: string;
const headers = () => ({ authorization: `Bearer ${token}` });
const saved = process.env.MEMORY_FORMATION;

beforeAll(async () => {
  process.env.MEMORY_FORMATION = 'extractive';
  token = addTokenToFile(file, { tenantId: 'tenant-f', principalId: 'fran', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file }, { worker: true });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
  if (saved === undefined) delete process.env.MEMORY_FORMATION;
  else process.env.MEMORY_FORMATION = saved;
});

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Sends `text` in a new session, waits for the run and for its formation; returns run and ledger row. */
async function formedTurn(text: string, sessionId?: string) {
  const sid = sessionId ?? (await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: headers() })).body.id;
  const m = await call(h.base, 'POST', `/v1/sessions/${sid}/messages`, {
    body: { content: [{ type: 'text', text }] },
    headers: headers(),
  });
  expect(m.status).toBe(202);
  const run: WireBody = await until('run completed', async () => {
    const r = await call(h.base, 'GET', `/v1/runs/${m.body.run_id}`, { headers: headers() });
    return r.body.status === 'completed' ? r.body : undefined;
  });
  const ledger = await until('formation', () => ledgerRow(run.id));
  return { run, ledger, sessionId: sid };
}

async function ledgerRow(runId: string) {
  const row = (
    await h.t.platform.db.query<{ status: string; attempts: number; outcome: Record<string, unknown> }>(
      `SELECT status, attempts, outcome FROM memory_formations WHERE run_id = $1`,
      [runId],
    )
  ).rows[0];
  return row?.status === 'formed' ? row : undefined;
}

const memories = async () =>
  (await call(h.base, 'GET', '/v1/memories', { headers: headers() })).body.items as WireBody[];

const streamEvents = async () =>
  Number(
    (
      await h.t.platform.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM events WHERE session_id = $1`, [
        memoryStreamIdOf('tenant-f', 'fran'),
      ])
    ).rows[0].n,
  );

let zone: WireBody;
let firstRunId: string;

describe('extractive formation at the end of a run', () => {
  it('stores the durable facts of the user’s message, with provenance, and nothing else', async () => {
    const { run, ledger } = await formedTurn(
      'Hi there. My time zone is Europe/Paris. I prefer short answers. My password is hunter2. My build is broken. What is 2+2?',
    );
    firstRunId = run.id;
    const items = await memories();
    expect(items.map((m) => m.statement).sort()).toEqual(['I prefer short answers', 'My time zone is Europe/Paris']);
    zone = items.find((m) => m.subject === 'time zone')!;
    const message = (
      await h.t.platform.db.query<{ id: string }>(
        `SELECT id FROM events WHERE run_id = $1 AND event_type = 'user.message.created'`,
        [run.id],
      )
    ).rows[0];
    expect(zone).toMatchObject({
      trust: 'user',
      status: 'active',
      confidence: 0.8,
      source_event_ids: [Number(message.id)],
      source_run_id: run.id,
    });
    // The credential was proposed and refused by the write policy; the task detail never proposed.
    expect(ledger.outcome).toEqual({ mode: 'extractive', proposed: 3, written: 2, refused: 1, fallback: null });
    const leaked = await h.t.platform.db.query(
      `SELECT 1 FROM memory_records WHERE statement ILIKE '%hunter2%' OR statement ILIKE '%broken%'`,
    );
    expect(leaked.rows).toEqual([]);
  });

  it('supersedes on a later contradiction, keeping both records', async () => {
    await formedTurn('my time zone is Asia/Tokyo');
    const items = await memories();
    const tokyo = items.find((m) => m.statement === 'my time zone is Asia/Tokyo')!;
    expect(tokyo.status).toBe('active');
    const old = (await call(h.base, 'GET', `/v1/memories/${zone.id}`, { headers: headers() })).body;
    expect(old).toMatchObject({ status: 'superseded', superseded_by: tokyo.id });
  });

  it('does not reinforce what the run’s own memory.remember wrote', async () => {
    const { ledger } = await formedTurn('remember that my team is called Blue Falcon');
    expect(ledger.outcome).toMatchObject({ proposed: 0, written: 0 });
    const team = (await memories()).filter((m) => m.subject === 'team');
    expect(team).toHaveLength(1);
    expect(team[0].reinforcements ?? 0).toBe(0);
  });

  it('re-forms a run whose claim went stale (its worker died) without recording anything twice', async () => {
    const before = await streamEvents();
    await h.t.platform.db.query(
      `UPDATE memory_formations SET status = 'claimed', claimed_at = now() - interval '1 hour', outcome = NULL
        WHERE run_id = $1`,
      [firstRunId],
    );
    const again = await until('re-formation', async () => {
      const row = await ledgerRow(firstRunId);
      return row && row.attempts === 2 ? row : undefined;
    });
    expect(again.outcome).toMatchObject({ proposed: 3, written: 2, refused: 1 });
    expect(await streamEvents()).toBe(before);
  });
});
