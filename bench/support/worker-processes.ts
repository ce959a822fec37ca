import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { withClient } from './pg-probes';

/** Real `agent worker` processes from dist for the scale bench, and the CPU they and the server use (from /proc). */
const ROOT = path.resolve(__dirname, '..', '..', '..');
const AGENT = path.join(ROOT, 'bin', 'agent.js');

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly dataDir: string;
}

/** `agent worker` processes from dist, each with its own data directory; resolves once each logged its start. */
export async function startWorkers(n: number, url: string): Promise<WorkerProcess[]> {
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

export async function stopWorkers(workers: WorkerProcess[]): Promise<void> {
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

const TICKS_PER_SECOND = 100; // Linux USER_HZ

/** CPU seconds (user+system) a process has used, with its reaped children's when `children`. */
export function cpuSeconds(pid: number, children = false): number {
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
export async function serverCpuSeconds(url: string): Promise<number> {
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
