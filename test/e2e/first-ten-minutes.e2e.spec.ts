import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../support/test-db';
import { ROOT, ensureBuilt, startAgent, waitFor } from '../support/processes';

/**
 * Issue 26 / ADR 0028, as a new user meets it: a missing bubblewrap is one warning with the fix and
 * never a restart loop; `agent doctor` names each problem with its fix; `agent --help` loads no framework.
 */

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `agent <args>` as a user runs it (bin/agent.js), with a clean environment plus `env`. */
function agent(args: string[], env: Record<string, string>): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'bin', 'agent.js'), ...args],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn', ...env },
        timeout: 120_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

const MISSING_BWRAP = '/nonexistent/agent-core-test/bwrap';

describe('the first ten minutes', () => {
  let db: TestDb;
  let dataDir: string;

  beforeAll(async () => {
    ensureBuilt();
    db = await createTestDb();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-first-'));
  }, 300_000);

  afterAll(async () => {
    await db.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('agent --help lists every command without loading Nest, TypeORM or the platform', async () => {
    const probe = `
      process.argv = [process.execPath, 'agent', '--help'];
      const { buildProgramFor } = require(${JSON.stringify(path.join(ROOT, 'dist', 'src', 'cli', 'main.js'))});
      const program = buildProgramFor(process.argv);
      const loaded = Object.keys(require.cache).filter((f) => /@nestjs|typeorm|[\\\\/]pg[\\\\/]|composition/.test(f));
      process.stdout.write(JSON.stringify({ names: program.commands.map((c) => c.name()), loaded }));`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['-e', probe], { cwd: ROOT }, (err, stdout) =>
        err ? reject(new Error(err.message)) : resolve(stdout),
      ),
    );
    const { names, loaded } = JSON.parse(out) as { names: string[]; loaded: string[] };
    expect(loaded).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['start', 'doctor', 'run', 'session', 'approval', 'chat', 'eval']));
    const help = await agent(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('doctor');
  }, 60_000);

  it('agent doctor: all ✓ against a migrated database, with --json; exit 0', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: db.url, AGENT_DATA_DIR: dataDir, PORT: String(port) };
    const r = await agent(['doctor'], env);
    expect(r.stdout).toMatch(/✓ node: Node \d+/);
    expect(r.stdout).toMatch(/✓ database: .*PostgreSQL \d+/);
    expect(r.stdout).toMatch(/✓ migrations: at head/);
    expect(r.stdout).toMatch(/✓ connections: \d+ of max_connections/);
    expect(r.stdout).toContain(`✓ port: 127.0.0.1:${port} is free`);
    const json = JSON.parse((await agent(['doctor', '--json'], env)).stdout) as {
      ok: boolean;
      checks: { name: string; ok: boolean }[];
    };
    // The sandbox line depends on the host (bubblewrap installed or not); everything else must pass.
    const sandboxOk = json.checks.filter((c) => c.name.startsWith('sandbox')).every((c) => c.ok);
    expect(json.checks.filter((c) => !c.name.startsWith('sandbox')).every((c) => c.ok)).toBe(true);
    expect(json.ok).toBe(sandboxOk);
    expect(r.code).toBe(sandboxOk ? 0 : 1);
  }, 120_000);

  it('agent doctor: an unwritable data dir, bad database credentials, a port in use and no bubblewrap are one ✗ line each with the fix, no stack trace; exit 1', async () => {
    const blocker = net.createServer();
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as net.AddressInfo).port)),
    );
    const notADir = path.join(dataDir, 'a-file');
    fs.writeFileSync(notADir, 'x');
    const badUser = new URL(db.url);
    badUser.username = 'no_such_role';
    badUser.password = 'wrong-password-5e6f';
    try {
      const r = await agent(['doctor'], {
        AGENT_DATA_DIR: path.join(notADir, 'data'),
        DATABASE_URL: badUser.toString(),
        PORT: String(port),
        SANDBOX_BWRAP: MISSING_BWRAP,
      });
      expect(r.code).toBe(1);
      const out = r.stdout + r.stderr;
      expect(out).not.toMatch(/^\s+at /m);
      expect(out).not.toContain('wrong-password-5e6f');
      expect(out).toMatch(/✗ data directory: .*a-file\/data is not writable/);
      expect(out).toMatch(/✗ database: .*cannot connect \(.*no_such_role/);
      expect(out).toContain('fix: check the user name and password in DATABASE_URL');
      expect(out).toContain(`✗ port: 127.0.0.1:${port} is in use by another program`);
      expect(out).toContain(`✗ sandbox: command execution is unavailable: ${MISSING_BWRAP} not found`);
      expect(out).toContain('fix: apt-get install -y bubblewrap');
      expect(out).toMatch(/4 check\(s\) failed/);
    } finally {
      blocker.close();
    }
  }, 120_000);

  it('agent start without bubblewrap: one warning with the fix, no restarts, ready names the reason, "run echo hi" says why', async () => {
    const port = await freePort();
    const proc = startAgent(['start'], {
      PORT: String(port),
      AGENT_DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      SANDBOX_BWRAP: MISSING_BWRAP,
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitFor(
        '/health/ready',
        async () => (await fetch(`${base}/health/ready`)).status === 200,
        150_000,
        250,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${proc.output()}`);
      });
      const ready = (await (await fetch(`${base}/health/ready`)).json()) as Record<string, string>;
      expect(ready).toMatchObject({
        status: 'ready',
        sandbox: 'unavailable',
        sandbox_fix: 'apt-get install -y bubblewrap',
      });
      expect(ready.sandbox_reason).toContain(`${MISSING_BWRAP} not found`);

      const session = (await (
        await fetch(`${base}/v1/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).json()) as { id: string };
      const submitted = await fetch(`${base}/v1/sessions/${session.id}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Idempotency-Key': 'no-bwrap-1' },
        body: JSON.stringify({ content: [{ type: 'text', text: 'run echo hi' }] }),
      });
      expect(submitted.status).toBe(202);
      const { run_id } = (await submitted.json()) as { run_id: string };
      const run = await waitFor(
        'the run to finish',
        async () => {
          const r = (await (await fetch(`${base}/v1/runs/${run_id}`)).json()) as { status: string; final_text: string };
          return ['completed', 'failed', 'cancelled'].includes(r.status) ? r : null;
        },
        90_000,
        250,
      );
      expect(run.final_text).toContain('command execution is unavailable');
      expect(run.final_text).toContain('apt-get install -y bubblewrap');

      // Keep running a while: a supervisor that restarts sandboxd would have logged it by now.
      await new Promise((r) => setTimeout(r, 15_000));
      const out = proc.output();
      expect(out.match(/warning: command execution is unavailable/g)).toHaveLength(1);
      expect(out).not.toMatch(/restarting/);
      expect(out).not.toMatch(/sandboxd.*listening/);
    } finally {
      proc.child.kill('SIGTERM');
      await Promise.race([proc.exited, new Promise((r) => setTimeout(r, 30_000))]);
      proc.child.kill('SIGKILL');
    }
  }, 300_000);

  it('agent start with a sandbox that fails its self-check: sandboxd is not restarted, one warning, the worker starts', async () => {
    const port = await freePort();
    // /bin/false is executable (the prerequisite check passes) but starts no sandbox: sandboxd's own
    // self-check fails and it exits 5, "cannot run here", which a restart would only repeat.
    const proc = startAgent(['start'], {
      PORT: String(port),
      AGENT_DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      SANDBOX_BWRAP: '/bin/false',
    });
    try {
      await waitFor(
        'the give-up warning',
        async () => proc.output().includes('warning: command execution is unavailable: agent sandboxd cannot run here'),
        150_000,
        250,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${proc.output()}`);
      });
      await waitFor('the worker', async () => proc.output().includes('agent-core worker'), 60_000, 250).catch(
        (e: Error) => {
          throw new Error(`${e.message}\n${proc.output()}`);
        },
      );
      await new Promise((r) => setTimeout(r, 10_000));
      const out = proc.output();
      expect(out.match(/warning: command execution is unavailable: agent sandboxd cannot run here/g)).toHaveLength(1);
      expect(out.match(/error: sandboxd:/g)).toHaveLength(1); // sandboxd ran once
      expect(out).not.toMatch(/restarting/);
    } finally {
      proc.child.kill('SIGTERM');
      await Promise.race([proc.exited, new Promise((r) => setTimeout(r, 30_000))]);
      proc.child.kill('SIGKILL');
    }
  }, 300_000);
});
