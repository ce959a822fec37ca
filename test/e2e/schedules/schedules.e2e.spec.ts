import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { agentCli } from '../../support/cli';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * Issue 29's acceptance as a user meets it: real `agent scheduler`, `agent worker` and `agent
 * schedule` processes over one database.
 */
let tdb: TestDb;
let db: Client;
let dataDir: string;
const procs: Proc[] = [];

const env = () => ({
  DATABASE_URL: tdb.url,
  AGENT_DATA_DIR: dataDir,
  AGENT_LEASE_SECONDS: '3',
  AGENT_POLL_INTERVAL_MS: '300',
  AGENT_SCHEDULER_POLL_MS: '1000',
  // Admission ceilings are exercised elsewhere; here every firing of the one local tenant is admitted.
  AGENT_SCHEDULE_TENANT_MAX_ACTIVE_RUNS: '0',
  AGENT_SCHEDULE_TENANT_MAX_PER_MINUTE: '0',
});
const start = (role: string, extra: Record<string, string> = {}) => {
  const p = startAgent([role], { ...env(), WORKER_METRICS_PORT: '0', ...extra });
  procs.push(p);
  return p;
};
const rows = async <T>(sql: string, values: unknown[] = []) => (await db.query(sql, values)).rows as T[];
const countOf = async (sql: string) => Number((await rows<{ n: string }>(sql))[0].n);

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  db = new Client({ connectionString: tdb.url });
  await db.connect();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'schedules-e2e-'));
}, 240_000);

afterAll(async () => {
  for (const p of procs) p.child.kill('SIGKILL');
  await db?.end();
  await tdb?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('scheduled runs, end to end', () => {
  it('`agent schedule create --in 5s "What is 2 plus 2?"` fires about five seconds later; its occurrence links the run, which answers 4', async () => {
    const scheduler = start('scheduler');
    const worker = start('worker');
    try {
      await waitFor('the scheduler', async () => /scheduler running/.test(scheduler.output()), 90_000);
      const created = await agentCli(['schedule', 'create', '--in', '5s', '--json', 'What is 2 plus 2?'], env());
      expect(created.code).toBe(0);
      const s = JSON.parse(created.stdout) as { id: string; nextFireAt: string; status: string; createdAt: string };
      expect(s.status).toBe('active');
      expect(Date.parse(s.nextFireAt) - Date.parse(s.createdAt)).toBeGreaterThanOrEqual(5000);
      expect(Date.parse(s.nextFireAt) - Date.parse(s.createdAt)).toBeLessThan(6100);
      const occ = await waitFor(
        'the occurrence',
        async () => {
          const r = await agentCli(['schedule', 'occurrences', s.id, '--json'], env());
          const items = JSON.parse(r.stdout || '[]') as {
            runId: string;
            runStatus: string;
            nominalAt: string;
            firedAt: string;
            status: string;
          }[];
          return items.length === 1 && items[0].runStatus === 'completed' ? items[0] : null;
        },
        90_000,
        500,
      );
      expect(occ).toMatchObject({ status: 'fired', nominalAt: s.nextFireAt });
      expect(Date.parse(occ.firedAt)).toBeGreaterThanOrEqual(Date.parse(occ.nominalAt));
      const [run] = await rows<{ final_text: string; priority: number }>(
        'SELECT final_text, priority FROM runs WHERE id = $1',
        [occ.runId],
      );
      expect(run.final_text).toMatch(/\b4\b/);
      expect(run.priority).toBe(200);
    } finally {
      scheduler.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      await Promise.all([scheduler.exited, worker.exited]);
    }
  }, 240_000);

  it('two schedulers racing over 1,000 due schedules, one SIGKILLed mid-way: one occurrence and one run per instant, none early', async () => {
    const N = 1000;
    const t: TestPlatform = await createTestPlatform(tdb.url);
    // One instant for all of them, far enough ahead that every schedule exists before it.
    const nominal = new Date(Math.ceil((Date.now() + 45_000) / 1000) * 1000).toISOString();
    try {
      const at = nominal.slice(0, 19);
      const queue = Array.from({ length: N }, (_, i) => i);
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = queue.shift(); i !== undefined; i = queue.shift())
            await t.platform.schedules.service.create(LOCAL_PRINCIPAL, {
              message: `What is ${i} plus 1?`,
              cadence: { kind: 'once', at, time_zone: 'UTC' },
            });
        }),
      );
    } finally {
      await t.close();
    }
    expect(Date.now()).toBeLessThan(Date.parse(nominal));
    const fired = `SELECT count(*)::text AS n FROM schedule_occurrences WHERE status = 'fired' AND nominal_at = '${nominal}'`;
    const a = start('scheduler', { AGENT_SCHEDULER_BATCH: '10' });
    const b = start('scheduler', { AGENT_SCHEDULER_BATCH: '10' });
    await waitFor('both schedulers', async () => [a, b].every((p) => /scheduler running/.test(p.output())), 90_000);
    // SIGKILL one once the race is under way (its open transaction rolls back).
    await waitFor('the race to start', async () => (await countOf(fired)) >= 100, 120_000, 20);
    a.child.kill('SIGKILL');
    const killedAt = await countOf(fired);
    await waitFor('every occurrence', async () => (await countOf(fired)) >= N, 180_000, 200);
    const [span] = await rows<{ first: Date; last: Date }>(
      'SELECT min(fired_at) AS first, max(fired_at) AS last FROM schedule_occurrences WHERE nominal_at = $1',
      [nominal],
    );
    process.stderr.write(
      `1,000 firings of one instant by two schedulers (one killed after ${killedAt}): ${span.last.getTime() - span.first.getTime()} ms from first to last\n`,
    );
    b.child.kill('SIGTERM');
    await b.exited;

    expect(killedAt).toBeLessThan(N);
    const occ = await rows<{ schedule_id: string; nominal_at: Date; fired_at: Date; run_id: string }>(
      'SELECT schedule_id, nominal_at, fired_at, run_id FROM schedule_occurrences WHERE nominal_at = $1',
      [nominal],
    );
    expect(occ).toHaveLength(N);
    expect(new Set(occ.map((o) => o.schedule_id)).size).toBe(N);
    for (const o of occ) {
      expect(o.nominal_at.toISOString()).toBe(nominal);
      expect(o.fired_at.getTime()).toBeGreaterThanOrEqual(o.nominal_at.getTime());
    }
    const ofInstant = `SELECT id FROM sessions WHERE metadata->>'nominal_at' = '${nominal}'`;
    expect(await countOf(`SELECT count(*)::text AS n FROM sessions WHERE id IN (${ofInstant})`)).toBe(N);
    const runs = `SELECT count(*)::text AS n FROM runs WHERE priority = 200 AND session_id IN (${ofInstant})`;
    expect(await countOf(runs)).toBe(N);
    const events = await rows<{ created_at: Date; nominal: string }>(
      "SELECT created_at, payload->>'nominalAt' AS nominal FROM events WHERE event_type = 'schedule.occurrence.fired' AND payload->>'nominalAt' = $1",
      [nominal],
    );
    expect(events).toHaveLength(N);
    for (const e of events) expect(e.created_at.getTime()).toBeGreaterThanOrEqual(Date.parse(e.nominal));
    const queued = await rows<{ created_at: Date }>(
      `SELECT created_at FROM events WHERE event_type = 'run.queued' AND session_id IN (${ofInstant})`,
    );
    expect(queued).toHaveLength(N);
    for (const q of queued) expect(q.created_at.getTime()).toBeGreaterThanOrEqual(Date.parse(nominal));
  }, 420_000);
});
