import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from './fleet/processes';

/** Debian's PostgreSQL 15 (package postgresql-15): what Patroni runs and Debian's pg_dump 15 can dump. */
export const PG15_BIN = '/usr/lib/postgresql/15/bin';

export function haveDebianPostgres(what: string): boolean {
  const missing = ['postgres', 'initdb', 'pg_dump', 'pg_restore'].filter((b) => !fs.existsSync(path.join(PG15_BIN, b)));
  if (missing.length === 0) return true;
  console.warn(`${what} skipped: ${missing.join(', ')} missing in ${PG15_BIN} (fix: apt-get install -y postgresql-15)`);
  return false;
}

export interface DebianPostgres {
  url(db: string): string;
  stop(): Promise<void>;
}

/** A throwaway PostgreSQL 15 cluster on a loopback port, run as the postgres OS user. */
export async function startDebianPostgres(): Promise<DebianPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-pg15-'));
  fs.chmodSync(dir, 0o755);
  const asUser = process.getuid?.() === 0 ? postgresUser() : undefined;
  if (asUser) fs.chownSync(dir, asUser.uid, asUser.gid);
  const data = path.join(dir, 'data');
  const init = spawnSync(
    path.join(PG15_BIN, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'],
    {
      encoding: 'utf8',
      ...asUser,
    },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const child: ChildProcess = spawn(
    path.join(PG15_BIN, 'postgres'),
    ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`],
    { stdio: ['ignore', 'pipe', 'pipe'], ...asUser },
  );
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (c: Buffer) => {
      log += c.toString();
      if (log.includes('ready to accept connections')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`postgres 15 exited (${code}): ${log}`)));
  });
  return {
    url: (db) => `postgres://postgres@127.0.0.1:${port}/${db}`,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresUser(): { uid: number; gid: number } {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}
