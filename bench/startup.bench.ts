import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { printTable } from './support/print-table';

/**
 * `npm run bench -- startup [--fresh-clone]` (issue 26, ADR 0028): what a new user waits for.
 *   - `agent --help`, median of 15 (beside `node -e 0`, the floor on this machine): target ≤ 300 ms;
 *   - `npm start` to /health/ready on a built tree, first in a fresh data directory (initdb), then
 *     a second start on it: target ≤ 5 s for the second;
 *   - `agent run "What is 17 multiplied by 23?"` against the running platform: wall time minus the
 *     run's own time (its first to last event): target ≤ 500 ms;
 *   - with --fresh-clone: `git clone` of this tree, `npm install && npm start` to ready: target ≤ 45 s
 *     (npm's cache warm, as on a machine that installed once; the clone's own install builds dist/).
 */
const ROOT = path.resolve(__dirname, '..', '..');
const AGENT = path.join(ROOT, 'bin', 'agent.js');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function timeMs(cmd: string, args: string[], cwd = ROOT): number {
  const t = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd, stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`);
  return Number(process.hrtime.bigint() - t) / 1e6;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function untilReady(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > end) throw new Error(`not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Started {
  readonly ms: number;
  stop(): Promise<void>;
}

/** Signals a process group that may already be gone (npm can outlive its group by a moment). */
function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

/** `npm start` in `cwd` until /health/ready answers 200; the returned stop() sends SIGTERM and waits. */
async function npmStart(cwd: string, env: Record<string, string>, port: number): Promise<Started> {
  const t = Date.now();
  const child = spawn('npm', ['start'], {
    cwd,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: 'ignore',
    detached: true, // its own process group: npm, the supervisor and its children stop together
  });
  await untilReady(port, child, 300_000);
  const ms = Date.now() - t;
  return {
    ms,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        process.kill(-(child.pid as number), 'SIGTERM');
        setTimeout(() => killGroup(child.pid as number, 'SIGKILL'), 30_000).unref();
      }),
  };
}

/**
 * Wall time of `agent run` minus the run's own span (queued to completed, from the API's run view).
 * With the platform running on the same data directory, `agent run` talks to its API (ADR 0028).
 */
async function runOverheadMs(env: Record<string, string>, port: number): Promise<{ wall: number; run: number }> {
  const t = process.hrtime.bigint();
  const out = execFileSync(process.execPath, [AGENT, 'run', 'What is 17 multiplied by 23?'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  const wall = Number(process.hrtime.bigint() - t) / 1e6;
  const runId = /^run (\S+) \(session /m.exec(out)?.[1];
  if (!runId) throw new Error(`agent run printed no run id:\n${out}`);
  const view = (await (await fetch(`http://127.0.0.1:${port}/v1/runs/${runId}`)).json()) as {
    created_at: string;
    completed_at: string;
  };
  return { wall, run: Date.parse(view.completed_at) - Date.parse(view.created_at) };
}

async function freshClone(): Promise<{ install: number; start: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-fresh-'));
  try {
    execFileSync('git', ['clone', '--quiet', ROOT, dir]);
    const install = timeMs('npm', ['install', '--no-audit', '--no-fund'], dir);
    const started = await npmStart(dir, { AGENT_DATA_DIR: path.join(dir, '.data') }, await freePort());
    await started.stop();
    return { install, start: started.ms };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function runStartupBench(): Promise<void> {
  const rows: string[][] = [];
  const floor = median(Array.from({ length: 15 }, () => timeMs(process.execPath, ['-e', '0'])));
  const help = median(Array.from({ length: 15 }, () => timeMs(process.execPath, [AGENT, '--help'])));
  rows.push(['agent --help (median of 15)', `${help.toFixed(0)} ms`, '≤ 300 ms', `node -e 0: ${floor.toFixed(0)} ms`]);

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-startup-'));
  const env = { AGENT_DATA_DIR: dataDir };
  try {
    const first = await npmStart(ROOT, env, await freePort());
    await first.stop();
    rows.push(['npm start → ready (fresh data dir)', `${(first.ms / 1000).toFixed(1)} s`, '', 'initdb + migrations']);
    const port = await freePort();
    const second = await npmStart(ROOT, env, port);
    rows.push(['npm start → ready (second start)', `${(second.ms / 1000).toFixed(1)} s`, '≤ 5 s', 'no rebuild']);
    try {
      const runs: { wall: number; run: number }[] = [];
      for (let i = 0; i < 5; i++) runs.push(await runOverheadMs(env, port));
      const over = median(runs.map((r) => r.wall - r.run));
      rows.push([
        'agent run, wall − run span (median of 5)',
        `${over.toFixed(0)} ms`,
        '≤ 500 ms',
        `wall ${median(runs.map((r) => r.wall)).toFixed(0)} ms`,
      ]);
    } finally {
      await second.stop();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  if (process.argv.includes('--fresh-clone')) {
    const f = await freshClone();
    rows.push([
      'fresh clone: npm install && npm start → ready',
      `${((f.install + f.start) / 1000).toFixed(1)} s`,
      '≤ 45 s',
      `install ${(f.install / 1000).toFixed(1)} s + start ${(f.start / 1000).toFixed(1)} s`,
    ]);
  }
  printTable([{ header: 'measure' }, { header: 'value', right: true }, { header: 'target' }, { header: 'note' }], rows);
  console.log(`machine: ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)} (1 min)`);
}
