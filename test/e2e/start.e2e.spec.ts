import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureBuilt, ROOT, waitFor } from '../support/processes';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The postmaster pid of the embedded cluster under `dataDir` (following a /var/tmp relocation). */
function postmasterPid(dataDir: string): number | null {
  const moved = path.join(dataDir, 'postgres.location');
  const cluster = fs.existsSync(moved) ? fs.readFileSync(moved, 'utf8').trim() : path.join(dataDir, 'postgres');
  const pidFile = path.join(cluster, 'postmaster.pid');
  return fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]) : null;
}

/** A fresh data directory, a free port, and an environment with no DATABASE_URL or provider key. */
async function freshMachine(): Promise<{ dataDir: string; port: number; env: NodeJS.ProcessEnv }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-core-start-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    AGENT_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  return { dataDir, port, env };
}

describe('npm start on a machine with no DATABASE_URL', () => {
  beforeAll(() => ensureBuilt());

  it('serves /health/ready from an embedded PostgreSQL and stops everything on SIGTERM', async () => {
    const { dataDir, port, env } = await freshMachine();
    // `npm start` builds first only when a source changed (prestart; ensureBuilt above already did);
    // `exec` in the script makes SIGTERM reach node.
    const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const ready = await waitFor(
        '/health/ready',
        async () => {
          const r = await fetch(`http://127.0.0.1:${port}/health/ready`);
          return r.status === 200 ? ((await r.json()) as Record<string, unknown>) : null;
        },
        150_000,
        250,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${out}`);
      });
      expect(ready).toMatchObject({ status: 'ready', database: 'up', migrations: 'at_head' });
      expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
      expect(out).toContain(`http://127.0.0.1:${port}`);
      expect(out).toContain('embedded PostgreSQL');
      const pm = postmasterPid(dataDir);
      expect(pm).not.toBeNull();
      expect(alive(pm!)).toBe(true);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await waitFor('postmaster to exit', async () => !alive(pm!), 20_000);
    } finally {
      child.kill('SIGKILL');
    }
  }, 180_000);

  it('stops cleanly on a SIGTERM that arrives while it is still starting (the API up, the worker not yet)', async () => {
    const { dataDir, env } = await freshMachine();
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js'), 'start'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // The supervisor announces itself once its database is up, then starts the API and waits for
      // the execution service before the worker: the signal lands in that window.
      await waitFor(
        'the supervisor to start its children',
        () => Promise.resolve(out.includes('agent-core starting')),
        150_000,
        20,
      );
      const pm = postmasterPid(dataDir);
      expect(pm).not.toBeNull();
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out).toContain('agent-core stopped');
      await waitFor('postmaster to exit', async () => !alive(pm!), 20_000);
    } finally {
      child.kill('SIGKILL');
      // Children orphaned by a supervisor that died would keep these pipes (and the test) open.
      child.stdout.destroy();
      child.stderr.destroy();
    }
  }, 180_000);
});
