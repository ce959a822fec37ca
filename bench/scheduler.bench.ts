import { loadSettings } from '../src/config/settings';
import { createPlatform, type Platform } from '../src/composition/platform';
import { LOCAL_PRINCIPAL } from '../src/domain/principal';
import { envNumber } from './support/env';
import { openBenchDatabase } from './support/bench-database';
import { printTable } from './support/print-table';

/**
 * `npm run bench -- scheduler` (issue 29): N one-time schedules due within one minute, fired by one
 * scheduler; lateness = the occurrence's `fired_at` (its commit's clock) − its nominal instant, p50
 * and p99 (targets ≤ 50 ms and ≤ 500 ms). Then what an idle poll costs (the scheduler's
 * `fireDue` finding nothing due) with 0 and with IDLE far-future schedules beside the due-time
 * index, and the plan of that query: flat means an index range, never a scan.
 *
 * The schedules are created through the schedule service (events, deciders, projection) before the
 * scheduler starts, with their instants after the creation ends. The idle ones are copies of one
 * created schedule's projection row (a read-model load fixture for the poll, nothing fires them).
 * Knobs: BENCH_SCHEDULES (default 10,000), BENCH_IDLE_SCHEDULES (default 100,000), BENCH_WINDOW_S (60).
 */
export async function runSchedulerBench(): Promise<void> {
  const n = envNumber('BENCH_SCHEDULES', 10_000);
  const idle = envNumber('BENCH_IDLE_SCHEDULES', 100_000);
  const windowMs = envNumber('BENCH_WINDOW_S', 60) * 1000;
  const bench = await openBenchDatabase((line) => console.error(line));
  const platform = await createPlatform(
    { ...loadSettings(), fakeModelLatencyMs: 0, pollIntervalMs: 1000 },
    { service: 'bench', databaseUrl: bench.url, quiet: true, migrate: false, poolSize: 20 },
  );
  try {
    const lateness = await firingLateness(platform, n, windowMs);
    const polls = await idlePolls(platform, idle);
    printTable(
      [{ header: 'measure' }, { header: 'value', right: true }],
      [
        [`${n} schedules due within ${windowMs / 1000} s: lateness p50`, `${lateness.p50.toFixed(1)} ms`],
        ['lateness p99', `${lateness.p99.toFixed(1)} ms`],
        ['lateness max', `${lateness.max.toFixed(1)} ms`],
        ['occurrences measured (instant after creation ended)', String(lateness.fired)],
        ['idle poll, 0 idle schedules (median of 50)', `${polls.empty.toFixed(2)} ms`],
        [`idle poll, ${idle} idle schedules (median of 50)`, `${polls.loaded.toFixed(2)} ms`],
        ['due query plan', polls.plan],
      ],
    );
  } finally {
    await platform.close();
    await bench.close();
  }
}

async function createOnce(platform: Platform, atMs: number, i: number): Promise<void> {
  // A zoned local date-time in UTC, with milliseconds: the instant itself.
  const at = new Date(atMs).toISOString().replace('Z', '');
  await platform.schedules.service.create(LOCAL_PRINCIPAL, {
    message: `bench ${i}`,
    cadence: { kind: 'once', at, time_zone: 'UTC' },
  });
}

/** Creates N schedules whose instants start after the creation ends, then fires them with one scheduler. */
async function firingLateness(platform: Platform, n: number, windowMs: number) {
  // A pilot tells how long creating N takes, so every instant is still in the future when it ends.
  const pilot = performance.now();
  const far = Date.now() + 3_600_000;
  for (let i = 0; i < 20; i++) await createOnce(platform, far + i, -i);
  const perCreateMs = (performance.now() - pilot) / 20;
  // No credit for the 8-way concurrency: on a loaded machine it may buy nothing.
  const start = Date.now() + n * perCreateMs + 10_000;
  console.error(`creating ${n} schedules (${perCreateMs.toFixed(1)} ms each, 8 at a time)…`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < n; i = next++) await createOnce(platform, start + Math.floor((i * windowMs) / n), i);
    }),
  );
  const createdUntil = new Date().toISOString();
  if (Date.now() > start) console.error('warning: creation outlasted the margin; instants before its end are left out');
  const scheduler = platform.schedules.createScheduler({});
  await scheduler.start();
  try {
    const end = start + windowMs + 30_000;
    let fired = 0;
    while (Date.now() < end) {
      await new Promise((r) => setTimeout(r, 1000));
      fired = Number(
        (await platform.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM schedule_occurrences`)).rows[0].n,
      );
      if (fired >= n) break;
    }
  } finally {
    await scheduler.stop();
  }
  const rows = await platform.db.query<{ ms: number }>(
    `SELECT extract(epoch FROM (fired_at - nominal_at)) * 1000 AS ms FROM schedule_occurrences
      WHERE nominal_at >= $1 ORDER BY 1`,
    [createdUntil],
  );
  const ms = rows.rows.map((r) => Number(r.ms));
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), max: ms[ms.length - 1] ?? NaN, fired: ms.length };
}

/** The median time of a `fireDue` that finds nothing due, with and without `idle` far-future schedules. */
async function idlePolls(platform: Platform, idle: number) {
  const now = new Date().toISOString();
  const median = async () => {
    const t: number[] = [];
    for (let i = 0; i < 50; i++) {
      const s = performance.now();
      await platform.schedules.firing.fireDue(now, 100);
      t.push(performance.now() - s);
    }
    return t.sort((a, b) => a - b)[25];
  };
  await platform.db.query(`UPDATE schedules SET status = 'completed' WHERE status = 'active'`);
  const empty = await median();
  console.error(`copying one schedule row ${idle} times (far-future, active)…`);
  await platform.db.query(
    `INSERT INTO schedules (id, tenant_id, principal_id, status, revision, definition, next_fire_at, consecutive_failures, occurrence_count, created_at, updated_at)
     SELECT gen_random_uuid(), s.tenant_id, s.principal_id, 'active', 1, s.definition, now() + interval '30 days' + g * interval '1 second', 0, 0, now(), now()
       FROM (SELECT * FROM schedules LIMIT 1) s, generate_series(1, $1) g`,
    [idle],
  );
  await platform.db.query('ANALYZE schedules');
  const loaded = await median();
  const plan = await platform.db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN SELECT id FROM schedules WHERE status = 'active' AND next_fire_at <= now() ORDER BY next_fire_at LIMIT 100`,
  );
  return { empty, loaded, plan: plan.rows.map((r) => r['QUERY PLAN'].trim()).join(' / ') };
}
