import * as net from 'node:net';
import { startAgent, waitFor, type Proc } from '../processes';

/** Environment every fleet process shares: a short lease (a killed worker's runs come back fast), no tenant limits. */
export const FLEET_ENV: Record<string, string> = {
  AGENT_LEASE_SECONDS: '3',
  AGENT_POLL_INTERVAL_MS: '500',
  FAKE_MODEL_LATENCY_MS: '150',
  API_RATE_LIMIT_PER_MINUTE: '0',
  API_MAX_ACTIVE_RUNS_PER_TENANT: '0',
  SANDBOX_AUTOSTART: '0',
};

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts `agent api` on loopback and waits for /health/ready. */
export async function startApi(env: Record<string, string>): Promise<{ proc: Proc; base: string }> {
  const port = await freePort();
  const proc = startAgent(['api'], { ...FLEET_ENV, ...env, HOST: '127.0.0.1', PORT: String(port) });
  const base = `http://127.0.0.1:${port}`;
  await waitFor('the API to be ready', async () => (await fetch(`${base}/health/ready`)).status === 200, 90_000).catch(
    (e: Error) => {
      proc.child.kill('SIGKILL');
      throw new Error(`${e.message}\n${proc.output()}`);
    },
  );
  return { proc, base };
}

export function startWorker(env: Record<string, string>): Proc {
  return startAgent(['worker'], { ...FLEET_ENV, ...env });
}

export async function stopAll(procs: readonly Proc[]): Promise<void> {
  await Promise.all(
    procs.map(async (p) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return;
      p.child.kill('SIGTERM');
      const t = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
      await p.exited;
      clearTimeout(t);
    }),
  );
}
