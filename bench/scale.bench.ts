import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { CreateSessionCommand, CreateSessionHandler } from '../src/application/sessions/create-session';
import { SubmitMessageCommand, SubmitMessageHandler } from '../src/application/runs/submit-message';
import { createPlatform, type Platform } from '../src/composition/platform';
import { loadSettings } from '../src/config/settings';
import { LOCAL_PRINCIPAL } from '../src/domain/principal';
import { openBenchDatabase } from './support/bench-database';
import { envNumber } from './support/env';
import { printTable } from './support/print-table';

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
const ROOT = path.resolve(__dirname, '..', '..');
const AGENT = path.join(ROOT, 'bin', 'agent.js');
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

interface WorkerProcess {
  readonly child: ChildProcess;
  readonly dataDir: string;
}

/** `agent worker` processes from dist, each with its own data directory; resolves once each logged its start. */
async function startWorkers(n: number, url: string): Promise<WorkerProcess[]> {
  const started = Array.from({ length: n }, () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-bench-worker-'));
    const child = spawn(process.execPath, [AGENT, 'worker'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        DATABASE_URL: url,
        AGENT_DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        AGENT_WORKER_CONCURRENCY: '4',
        AGENT_POLL_INTERVAL_MS: '1000',
        AGENT_ARTIFACT_SWEEP_SECONDS: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const ready = new Promise<void>((resolve, reject) => {
      let out = '';
      const onData = (c: Buffer) => {
        out += c.toString();
        if (out.includes('worker started')) resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) =>
        reject(new Error(`agent worker exited ${code} before starting:\n${out.slice(-2000)}`)),
      );
      setTimeout(() => reject(new Error(`agent worker did not start within 60 s:\n${out.slice(-2000)}`)), 60_000);
    });
    return { proc: { child, dataDir }, ready };
  });
  await Promise.all(started.map((s) => s.ready));
  return started.map((s) => s.proc);
}

async function stopWorkers(workers: WorkerProcess[]): Promise<void> {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.child.exitCode !== null) return resolve();
          const kill = setTimeout(() => w.child.kill('SIGKILL'), 15_000);
          w.child.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          w.child.kill('SIGTERM');
        }),
    ),
  );
  for (const w of workers) fs.rmSync(w.dataDir, { recursive: true, force: true });
}

async function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url, application_name: 'agent-bench-probe' });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Server connections to the bench database by application_name (the probe's own excluded). */
async function connectionsByName(url: string, db: string): Promise<Record<string, number>> {
  return withClient(url, async (c) => {
    const r = await c.query<{ name: string; n: number }>(
      `SELECT regexp_replace(application_name, ':.*$', ':*') AS name, count(*)::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND application_name <> 'agent-bench-probe' GROUP BY 1`,
      [db],
    );
    return Object.fromEntries(r.rows.map((x) => [x.name || '(none)', x.n]));
  });
}

/** Samples every 100 ms until stopped; the peak of (all connections − this process's own). */
function sampleConnections(url: string, db: string, own: Record<string, number>) {
  let peak = { total: 0, byName: {} as Record<string, number> };
  let running = true;
  const loop = (async () => {
    while (running) {
      const now = await connectionsByName(url, db);
      const byName = Object.fromEntries(
        Object.entries(now)
          .map(([k, v]) => [k, v - (own[k] ?? 0)] as const)
          .filter(([, v]) => v > 0),
      );
      const total = Object.values(byName).reduce((a, b) => a + b, 0);
      if (total > peak.total) peak = { total, byName };
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

/**
 * Write transactions so far (each took a transaction id: reads never do, so the bench's own polling
 * is not counted) and the WAL position. `txid_current()` takes one id itself; the caller subtracts it.
 */
async function dbCounters(url: string): Promise<{ commits: number; walBytes: number }> {
  return withClient(url, async (c) => {
    const r = await c.query<{ xid: string; wal: string }>(
      `SELECT txid_current()::text AS xid, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal`,
    );
    return { commits: Number(r.rows[0].xid), walBytes: Number(r.rows[0].wal) };
  });
}

/** The server's raw commit rate: 8 clients, each INSERT (autocommit) in a loop for 3 s. */
async function commitCeiling(url: string): Promise<number> {
  await withClient(url, (c) =>
    c.query('CREATE TABLE IF NOT EXISTS bench_commit_ceiling (id bigserial, at timestamptz)'),
  );
  const end = Date.now() + 3000;
  const counts = await Promise.all(
    Array.from({ length: 8 }, () =>
      withClient(url, async (c) => {
        let n = 0;
        while (Date.now() < end) {
          await c.query('INSERT INTO bench_commit_ceiling (at) VALUES (now())');
          n++;
        }
        return n;
      }),
    ),
  );
  await withClient(url, (c) => c.query('DROP TABLE bench_commit_ceiling'));
  return counts.reduce((a, b) => a + b, 0) / 3;
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const TICKS_PER_SECOND = 100; // Linux USER_HZ

/** CPU seconds (user+system) a process has used, with its reaped children's when `children`. */
function cpuSeconds(pid: number, children = false): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    const ticks = Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0);
    return ticks / TICKS_PER_SECOND;
  } catch {
    return 0; // gone: its time is in its parent's cutime once reaped
  }
}

/** The PostgreSQL server's CPU seconds: the postmaster (with reaped backends) plus its live children. */
async function serverCpuSeconds(url: string): Promise<number> {
  // Read while the probe's backend is alive: its parent is the postmaster.
  const postmaster = await withClient(url, async (c) => {
    const { pid } = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0];
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  });
  let total = cpuSeconds(postmaster, true);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const s = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) total += cpuSeconds(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return total;
}
