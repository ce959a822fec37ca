import * as os from 'node:os';
import { CreateSessionCommand, CreateSessionHandler } from '../src/application/sessions/create-session';
import { SubmitMessageCommand, SubmitMessageHandler } from '../src/application/runs/submit-message';
import { createPlatform, type Platform } from '../src/composition/platform';
import { loadSettings } from '../src/config/settings';
import { LOCAL_PRINCIPAL } from '../src/domain/principal';
import { openBenchDatabase } from './support/bench-database';
import { envNumber } from './support/env';
import { printTable } from './support/print-table';
import { commitCeiling, connectionsByName, dbCounters, sampleConnections } from './support/pg-probes';
import {
  cpuSeconds,
  serverCpuSeconds,
  startWorkers,
  stopWorkers,
  type WorkerProcess,
} from './support/worker-processes';

/**
 * `npm run bench -- scale` (issue 27 item 6, ADR 0045): on this machine, 1, 2 and 4 real `agent worker`
 * processes (from dist, as deployed) against one PostgreSQL (the embedded one, or DATABASE_URL):
 *   - runs/s: BENCH_SCALE_RUNS (default 100) calculator turns submitted at once by 4 concurrent
 *     submitters into sessions made beforehand; the window is the first run.queued to the last
 *     run.completed, both stamped by the processes that committed them (one machine, one clock);
 *   - claim latency: run.queued commit acknowledged → run.claimed, p50/p99, twice: under that burst
 *     (so it includes waiting for a free worker slot) and for BENCH_SCALE_PACED (default 20) runs
 *     submitted one at a time to idle workers (the NOTIFY wake-up path alone);
 *   - connections: the peak number of server connections to the bench database held by the workers
 *     (pg_stat_activity, sampled every 100 ms, minus this process's own), by application_name;
 *   - per run: write transactions (transaction ids taken) and WAL bytes (pg_current_wal_lsn), the
 *     submit included; and the raw commit ceiling of the server (8 clients, INSERT+COMMIT, 3 s), which with
 *     commits per run gives the database-bound ceiling in runs/s (bench/RESULTS.md: the method).
 */
const POLICY = 'fake:calculator_then_answer';

type Submit = (sessionId: string) => Promise<{ runId: string; committedAtMs: number }>;

export async function runScaleBench(): Promise<void> {
  const burst = envNumber('BENCH_SCALE_RUNS', 100);
  const paced = envNumber('BENCH_SCALE_PACED', 20);
  const counts = (process.env.BENCH_SCALE_WORKERS ?? '1,2,4')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const bench = await openBenchDatabase((line) => console.error(line));
  const platform = await createPlatform(
    { ...loadSettings(), pollIntervalMs: 1000 },
    { service: 'bench', databaseUrl: bench.url, quiet: true, migrate: false, poolSize: 4 },
  );
  const rows: string[][] = [];
  let firstRate: number | undefined;
  const breakdowns: string[] = [];
  try {
    const { createSession, submit } = handlers(platform);
    const ceiling = await commitCeiling(bench.url);
    console.error(`server commit ceiling: ${ceiling.toFixed(0)} commits/s (8 clients, INSERT+COMMIT)`);
    await Promise.all([1, 2, 3, 4].map(() => platform.db.query('SELECT pg_sleep(0.05)'))); // pool warm: 4 open
    const own = await connectionsByName(bench.url, bench.name);
    for (const w of counts) {
      console.error(`${w} worker process(es): starting…`);
      const workers = await startWorkers(w, bench.url);
      try {
        const sessions = await Promise.all(Array.from({ length: burst + paced }, () => createSession()));
        const r = await measure(platform, bench, submit, sessions, burst, own, workers);
        const idle = await pacedClaims(platform, submit, sessions.slice(burst));
        firstRate ??= r.runsPerSecond;
        rows.push(row(w, r, idle, ceiling, firstRate));
        breakdowns.push(
          `${w} worker(s): ${Object.entries(r.byName)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')}`,
        );
      } finally {
        await stopWorkers(workers);
      }
    }
  } finally {
    await platform.close();
    await bench.close();
  }
  console.log(`\nscale: ${burst} runs per burst, ${paced} paced runs, ${os.cpus().length} CPUs, ${bench.server}\n`);
  printTable(
    [
      { header: 'workers' },
      { header: 'runs/s', right: true },
      { header: 'speed-up', right: true },
      { header: 'claim p50/p99 burst ms', right: true },
      { header: 'claim p50/p99 idle ms', right: true },
      { header: 'worker conns (peak)', right: true },
      { header: 'write commits/run', right: true },
      { header: 'WAL KiB/run', right: true },
      { header: 'DB-bound ceiling runs/s', right: true },
      { header: 'worker CPU ms/run', right: true },
      { header: 'server CPU ms/run', right: true },
    ],
    rows,
  );
  console.log(`\nworker connections by application_name at peak:\n  ${breakdowns.join('\n  ')}`);
}

interface Measured {
  runsPerSecond: number;
  claimMs: number[];
  peakConnections: number;
  byName: Record<string, number>;
  commitsPerRun: number;
  walBytesPerRun: number;
  /** CPU of the worker processes, and of the PostgreSQL server (submit and polling included), per run. */
  workerCpuMsPerRun: number;
  serverCpuMsPerRun: number;
}

const workerCpu = (workers: WorkerProcess[]) => workers.reduce((a, w) => a + cpuSeconds(w.child.pid ?? 0), 0);

function row(w: number, r: Measured, idle: number[], ceiling: number, first: number): string[] {
  const pair = (ms: number[]) => `${pct(ms, 50).toFixed(0)} / ${pct(ms, 99).toFixed(0)}`;
  return [
    String(w),
    r.runsPerSecond.toFixed(1),
    `${(r.runsPerSecond / first).toFixed(2)}x`,
    pair(r.claimMs),
    pair(idle),
    String(r.peakConnections),
    r.commitsPerRun.toFixed(1),
    (r.walBytesPerRun / 1024).toFixed(1),
    (ceiling / r.commitsPerRun).toFixed(0),
    r.workerCpuMsPerRun.toFixed(1),
    r.serverCpuMsPerRun.toFixed(1),
  ];
}

/** The real application handlers (what the API and CLI call), without a Nest container. */
function handlers(p: Platform) {
  const appSettings = { defaultAgentId: 'general', maxMessageChars: 32_000 };
  const sessions = new CreateSessionHandler(p.store, p.agents, p.ids, appSettings);
  const messages = new SubmitMessageHandler(p.store, p.sessions, p.agents, p.ids, appSettings, p.runs, p.toolRecords);
  const createSession = async () => (await sessions.execute(new CreateSessionCommand(LOCAL_PRINCIPAL))).id;
  const submit: Submit = async (sessionId) => {
    const r = await messages.execute(
      new SubmitMessageCommand(LOCAL_PRINCIPAL, sessionId, 'What is 17 multiplied by 23?', null, {
        modelPolicy: POLICY,
      }),
    );
    // The handler returns once run.queued's append has committed: the client-observed commit.
    return { runId: r.runId, committedAtMs: Date.now() };
  };
  return { createSession, submit };
}

/** Submits `n` runs with 4 concurrent submitters and waits for all of them; samples connections meanwhile. */
async function measure(
  p: Platform,
  bench: { url: string; name: string },
  submit: Submit,
  sessions: string[],
  n: number,
  own: Record<string, number>,
  workers: WorkerProcess[],
): Promise<Measured> {
  const before = await dbCounters(bench.url);
  const cpuBefore = { workers: workerCpu(workers), server: await serverCpuSeconds(bench.url) };
  const committedAt = new Map<string, number>();
  const sampler = sampleConnections(bench.url, bench.name, own);
  let next = 0;
  await Promise.all(
    [0, 1, 2, 3].map(async () => {
      for (let i = next++; i < n; i = next++) {
        const { runId, committedAtMs } = await submit(sessions[i]);
        committedAt.set(runId, committedAtMs);
      }
    }),
  );
  const ids = [...committedAt.keys()];
  await waitTerminal(p, ids);
  const peak = await sampler.stop();
  const after = await dbCounters(bench.url);
  const cpuAfter = { workers: workerCpu(workers), server: await serverCpuSeconds(bench.url) };
  const window = await p.db.query<{ s: number }>(
    `SELECT extract(epoch FROM max(created_at) FILTER (WHERE event_type = 'run.completed')
                              - min(created_at) FILTER (WHERE event_type = 'run.queued')) AS s
       FROM events WHERE run_id = ANY($1::uuid[])`,
    [ids],
  );
  return {
    runsPerSecond: n / Number(window.rows[0].s),
    claimMs: await claimLatencies(p, committedAt),
    peakConnections: peak.total,
    byName: peak.byName,
    commitsPerRun: (after.commits - before.commits - 1) / n,
    walBytesPerRun: (after.walBytes - before.walBytes) / n,
    workerCpuMsPerRun: ((cpuAfter.workers - cpuBefore.workers) * 1000) / n,
    serverCpuMsPerRun: ((cpuAfter.server - cpuBefore.server) * 1000) / n,
  };
}

/** Runs submitted one at a time, each waited for: queued commit → claimed with idle workers. */
async function pacedClaims(p: Platform, submit: Submit, sessions: string[]): Promise<number[]> {
  const committedAt = new Map<string, number>();
  for (const s of sessions) {
    const { runId, committedAtMs } = await submit(s);
    committedAt.set(runId, committedAtMs);
    await waitTerminal(p, [runId]);
  }
  return claimLatencies(p, committedAt);
}

/** run.queued commit acknowledged (this process's clock) → run.claimed's event time (the worker's), sorted. */
async function claimLatencies(p: Platform, committedAt: Map<string, number>): Promise<number[]> {
  const res = await p.db.query<{ run_id: string; ms: string }>(
    `SELECT run_id, extract(epoch FROM created_at) * 1000 AS ms FROM events
      WHERE event_type = 'run.claimed' AND run_id = ANY($1::uuid[])`,
    [[...committedAt.keys()]],
  );
  return res.rows.map((r) => Math.max(0, Math.round(Number(r.ms)) - committedAt.get(r.run_id)!)).sort((a, b) => a - b);
}

async function waitTerminal(p: Platform, ids: string[]): Promise<void> {
  const end = Date.now() + 300_000;
  for (;;) {
    const r = await p.db.query<{ n: string; bad: string }>(
      `SELECT count(*) FILTER (WHERE status IN ('completed','failed','cancelled')) AS n,
              count(*) FILTER (WHERE status IN ('failed','cancelled')) AS bad
         FROM runs WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    if (Number(r.rows[0].bad) > 0) throw new Error(`${r.rows[0].bad} benchmark runs did not complete`);
    if (Number(r.rows[0].n) === ids.length) return;
    if (Date.now() > end) throw new Error('benchmark runs still not terminal after 300 s');
    await new Promise((res) => setTimeout(res, 20));
  }
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
