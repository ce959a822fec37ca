import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface RunningPgBouncer {
  /** `target`'s database, through PgBouncer in transaction mode. */
  readonly url: string;
  /** PgBouncer's admin console (`SHOW POOLS`, `SHOW STATS`). */
  readonly adminUrl: string;
  stop(): Promise<void>;
}

/** Whether Debian's pgbouncer is installed; warns once (with the fix) when it is not. */
export function havePgBouncer(what: string): boolean {
  if (fs.existsSync(PGBOUNCER)) return true;
  console.warn(`${what} skipped: ${PGBOUNCER} is missing (fix: apt-get install -y pgbouncer)`);
  return false;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts PgBouncer in transaction mode in front of `targetUrl`'s server (trust auth on loopback, as
 * the test server has), `poolSize` server connections per database and user. As root it runs as the
 * postgres OS user (PgBouncer refuses root).
 */
export async function startPgBouncer(targetUrl: string, poolSize = 8): Promise<RunningPgBouncer> {
  const target = new URL(targetUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-pgbouncer-'));
  const port = await freePort();
  fs.writeFileSync(path.join(dir, 'users.txt'), `"${user}" ""\n`);
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${dir}/users.txt`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      // pg sends these on connect; PgBouncer 1.18 refuses unknown startup parameters otherwise.
      'ignore_startup_parameters = extra_float_digits,options',
      'server_reset_query =',
      '',
    ].join('\n'),
  );
  const asUser = process.getuid?.() === 0 ? postgresUser() : undefined;
  if (asUser) spawnSync('chown', ['-R', `${asUser.uid}:${asUser.gid}`, dir]);
  fs.chmodSync(dir, 0o755);
  const child = spawn(PGBOUNCER, [path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'], ...asUser });
  let log = '';
  child.stdout?.on('data', (c: Buffer) => (log += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  await waitListening(port, child, () => log);
  const base = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}`;
  return {
    url: `${base}${target.pathname}`,
    adminUrl: `${base}/pgbouncer`,
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
  if (uid.status !== 0) throw new Error('pgbouncer: no postgres OS user to run as');
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

async function waitListening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const end = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`pgbouncer did not listen on ${port}: ${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
