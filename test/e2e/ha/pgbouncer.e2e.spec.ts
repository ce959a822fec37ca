import { Client } from 'pg';
import { createTestDb, type TestDb } from '../../support/test-db';
import { ensureBuilt, waitFor, type Proc } from '../../support/processes';
import { havePgBouncer, startPgBouncer, type RunningPgBouncer } from '../../support/pgbouncer';
import { driveLoad } from '../../support/fleet/drive';
import { checkFleet } from '../../support/fleet/invariants';
import { startApi, startWorker, stopAll } from '../../support/fleet/processes';

/**
 * The API's and workers' query pools through PgBouncer 1.18 in transaction mode (DATABASE_POOL_URL),
 * LISTEN on the direct DATABASE_URL (docs/operations/pooling.md, ADR 0030).
 */
const d = havePgBouncer('the PgBouncer test') ? describe : describe.skip;

let tdb: TestDb;
let bouncer: RunningPgBouncer;
const procs: Proc[] = [];

beforeAll(async () => {
  if (!havePgBouncer('the PgBouncer test')) return;
  ensureBuilt();
  tdb = await createTestDb();
  bouncer = await startPgBouncer(tdb.url, 6);
}, 120_000);
afterAll(async () => {
  await stopAll(procs);
  await bouncer?.stop();
  await tdb?.drop();
}, 60_000);

/** Transactions PgBouncer has carried for the test database (its admin console's SHOW STATS). */
async function pooledTransactions(): Promise<number> {
  const c = new Client({ connectionString: bouncer.adminUrl });
  await c.connect();
  try {
    const { rows } = await c.query<{ database: string; total_xact_count: string }>('SHOW STATS');
    return Number(rows.find((r) => r.database === tdb.name)?.total_xact_count ?? 0);
  } finally {
    await c.end();
  }
}

d('agent-core behind PgBouncer in transaction mode', () => {
  it('runs the calculator turn, and a load with a worker SIGKILLed mid-way keeps the chaos invariants', async () => {
    const env = { DATABASE_URL: tdb.url, DATABASE_POOL_URL: bouncer.url };
    const api = await startApi(env);
    procs.push(api.proc);
    const workers = [startWorker(env), startWorker(env)];
    procs.push(...workers);
    const before = await pooledTransactions();

    // The calculator turn alone first (the plan §26 turn, watched over SSE).
    const first = await driveLoad({ apis: [api.base], runs: 1, concurrency: 1, runTimeoutMs: 60_000 });
    expect(first.runs[0]).toMatchObject({ terminal: 'run.completed', expected: 'The result is 33.' });

    // Then the chaos check: 40 runs, one worker SIGKILLed once 10 have finished; its leases expire
    // and the other worker (and a restarted one) finish everything.
    let killed = false;
    const load = driveLoad({
      apis: [api.base],
      runs: 40,
      concurrency: 8,
      runTimeoutMs: 120_000,
      onRunDone: (n) => {
        if (n < 10 || killed) return;
        killed = true;
        workers[0].child.kill('SIGKILL');
        procs.push(startWorker(env));
      },
    });
    const report = await load;
    expect(killed).toBe(true);
    const verdict = await checkFleet(tdb.url, [...first.runs, ...report.runs]);
    expect(verdict).toMatchObject({
      runs: 41,
      completedAsExpected: 41,
      wrong: [],
      gappySessions: 0,
      duplicateTerminals: 0,
      duplicateEffects: 0,
      incompleteStreams: 0,
    });
    // The pools really went through PgBouncer (LISTEN and NOTIFY wake-ups came over the direct URL).
    await waitFor('PgBouncer stats', async () => (await pooledTransactions()) - before > 41 * 4, 10_000);
    for (const p of procs) expect(p.output()).not.toMatch(/prepared statement .* (does not exist|already exists)/);
  }, 300_000);
});
