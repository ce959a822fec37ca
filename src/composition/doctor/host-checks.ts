import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { Settings } from '../../config/settings';
import { fail, messageOf, pass, type CheckResult } from './check';

/** package.json's engines.node floor. */
export const MIN_NODE = [20, 19, 0] as const;
/** Below this much free space on the data directory's file system the database and artifacts soon fail. */
export const MIN_FREE_BYTES = 512 * 1024 * 1024;

export function checkNode(version: string = process.versions.node): CheckResult {
  const have = version.split('.').map(Number);
  const older = MIN_NODE.findIndex((want, i) => (have[i] ?? 0) !== want) ?? -1;
  const tooOld = older !== -1 && (have[older] ?? 0) < MIN_NODE[older];
  return tooOld
    ? fail(
        'node',
        `Node ${version} is older than ${MIN_NODE.join('.')}`,
        `install Node ${MIN_NODE[0]}.${MIN_NODE[1]} or newer (e.g. from https://nodejs.org or your package manager)`,
      )
    : pass('node', `Node ${version}`);
}

/** The data directory exists (or can be created), is writable by this user, and has room. */
export function checkDataDir(settings: Settings): CheckResult {
  const dir = settings.dataDir;
  const fix = `use a directory this user can write: AGENT_DATA_DIR=/path/to/data in .env (or chown it to this user)`;
  try {
    fs.mkdirSync(dir, { recursive: true });
    const probe = path.join(dir, `.doctor-${process.pid}`);
    fs.writeFileSync(probe, 'ok');
    fs.rmSync(probe);
  } catch (e) {
    return fail('data directory', `${dir} is not writable (${messageOf(e)})`, fix);
  }
  const st = fs.statfsSync(dir);
  const free = st.bavail * st.bsize;
  const mib = (n: number) => `${Math.floor(n / (1024 * 1024))} MiB`;
  if (free < MIN_FREE_BYTES)
    return fail(
      'data directory',
      `${dir}: only ${mib(free)} free (at least ${mib(MIN_FREE_BYTES)} needed)`,
      `free space on that file system, or point AGENT_DATA_DIR at a larger one`,
    );
  return pass('data directory', `${dir} writable, ${mib(free)} free`);
}

/** Whether something already listens on host:port; if it is agent-core itself, that is fine. */
export async function checkPort(settings: Settings): Promise<CheckResult> {
  const where = `${settings.host}:${settings.port}`;
  const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    const server = net.createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolve(e));
    server.listen(settings.port, settings.host, () => server.close(() => resolve(null)));
  });
  if (!err) return pass('port', `${where} is free for the API`);
  if (err.code === 'EADDRINUSE' && (await isAgentCore(settings)))
    return pass('port', `${where}: agent-core is already running there`);
  const cause = err.code === 'EADDRINUSE' ? 'is in use by another program' : `cannot be bound (${messageOf(err)})`;
  return fail('port', `${where} ${cause}`, `stop that program, or set PORT=<a free port> (and HOST) in .env`);
}

async function isAgentCore(settings: Settings): Promise<boolean> {
  const host = settings.host === '0.0.0.0' ? '127.0.0.1' : settings.host;
  try {
    const r = await fetch(`http://${host}:${settings.port}/health/live`, { signal: AbortSignal.timeout(1500) });
    const body = (await r.json()) as { status?: string };
    return r.ok && body.status === 'ok';
  } catch {
    return false;
  }
}
