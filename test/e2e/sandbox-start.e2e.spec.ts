import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureBuilt, startAgent, waitFor } from '../support/processes';

/**
 * `agent start` (what `npm start` runs after its build) launches the execution service beside the
 * API and the worker with a scrubbed environment; the demo "run python3 -c print(2+2)" goes
 * worker → port → unix socket → sandboxd → bubblewrap and answers with 4; SIGTERM stops sandboxd too.
 */
const runnable = fs.existsSync('/usr/bin/python3') && fs.existsSync('/usr/bin/bwrap');
const d = runnable ? describe : describe.skip;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Pids of `main.js sandboxd` processes whose environment names this data dir. */
function sandboxdPids(dataDir: string): { pid: number; environ: string[] }[] {
  const out: { pid: number; environ: string[] }[] = [];
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (!cmd.includes('sandboxd')) continue;
      const environ = fs.readFileSync(`/proc/${p}/environ`, 'utf8').split('\0');
      if (environ.includes(`AGENT_DATA_DIR=${dataDir}`)) out.push({ pid: Number(p), environ });
    } catch {
      /* gone */
    }
  }
  return out;
}

d('npm start with the execution service', () => {
  beforeAll(() => ensureBuilt());

  it('runs "run python3 -c print(2+2)" in the sandbox and answers 4; SIGTERM stops sandboxd', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-sbx-start-'));
    fs.chmodSync(dataDir, 0o755);
    const port = await freePort();
    const proc = startAgent(['start'], {
      PORT: String(port),
      AGENT_DATA_DIR: dataDir,
      // Present in the supervisor's environment; must never reach sandboxd.
      AGENT_E2E_SECRET_TOKEN: 'e2e-secret-value-0123456789',
    });
    try {
      await waitFor(
        '/health/ready',
        async () => (await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200,
        150_000,
        250,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${proc.output()}`);
      });
      // The API does not wait for sandboxd (only the worker does), so ready can come first.
      await waitFor(
        'sandboxd listening',
        async () => proc.output().includes('sandboxd (namespace) listening'),
        60_000,
        100,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${proc.output()}`);
      });
      expect(proc.output()).toContain('sandboxd (namespace) listening');
      const daemons = sandboxdPids(dataDir);
      expect(daemons).toHaveLength(1);
      const names = daemons[0].environ.map((e) => e.slice(0, e.indexOf('=')));
      expect(names).not.toContain('DATABASE_URL');
      expect(names).not.toContain('AGENT_E2E_SECRET_TOKEN');
      expect(daemons[0].environ.join('\n')).not.toContain('e2e-secret-value');

      const base = `http://127.0.0.1:${port}`;
      const session = (await (
        await fetch(`${base}/v1/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).json()) as { id: string };
      const submitted = await fetch(`${base}/v1/sessions/${session.id}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Idempotency-Key': 'sbx-1' },
        body: JSON.stringify({ content: [{ type: 'text', text: 'run python3 -c print(2+2)' }] }),
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
      expect(run.status).toBe('completed');
      expect(run.final_text).toMatch(/exited with code 0\. Output \(untrusted, shown as is\): 4\b/);

      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
      expect(sandboxdPids(dataDir)).toEqual([]);
    } finally {
      proc.child.kill('SIGKILL');
      for (const { pid } of sandboxdPids(dataDir)) process.kill(pid, 'SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});
