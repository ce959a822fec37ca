import * as path from 'node:path';
import { createDataSource } from '../../../ormconfig';
import { readOwnerFile, startEmbeddedPostgres, type RunningPostgres } from './embedded/embedded-postgres';
import { Client } from 'pg';
import { ConfigurationError } from '../../domain/errors';

export interface DatabaseHandle {
  readonly url: string;
  readonly embedded: RunningPostgres | null;
  close(): Promise<void>;
}

/**
 * DATABASE_URL set: use that server and embed nothing. Unset: start the embedded PostgreSQL under
 * `$AGENT_DATA_DIR/postgres` and use its `agent_core` database (created on first start).
 */
export async function connectDatabase(opts: {
  databaseUrl: string | null;
  dataDir: string;
  log: (line: string) => void;
}): Promise<DatabaseHandle> {
  if (opts.databaseUrl) return { url: opts.databaseUrl, embedded: null, close: async () => undefined };
  // Another agent-core process (e.g. `npm start`) already runs the embedded server: share it.
  const running = await runningEmbeddedUrl(path.join(opts.dataDir, 'postgres'));
  if (running) return { url: running, embedded: null, close: async () => undefined };
  const pg = await startEmbeddedPostgres({ dataDir: path.join(opts.dataDir, 'postgres'), log: opts.log });
  try {
    await ensureDatabase(pg.adminUrl, 'agent_core');
  } catch (e) {
    await pg.stop();
    throw e;
  }
  return { url: pg.adminUrl.replace(/\/postgres$/, '/agent_core'), embedded: pg, close: () => pg.stop() };
}

/** The URL of an embedded server started by another live process on this data directory, if any. */
async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  const owner = readOwnerFile(dataDir);
  if (!owner || owner.pid === process.pid) return null;
  try {
    process.kill(owner.pid, 0);
  } catch {
    return null;
  }
  const url = `postgres://postgres@127.0.0.1:${owner.port}/agent_core`;
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return url;
  } catch {
    return null;
  }
}

export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    const r = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (r.rowCount === 0) await c.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
  } finally {
    await c.end();
  }
}

/** The session-level advisory lock every migrating process takes first ("agent-core migrate"). */
const MIGRATION_LOCK_KEY = 0x61676d69; // 'agmi'

/**
 * Applies pending migrations (each in its own transaction). Returns the names applied. Processes
 * started together on a fresh database (`agent api` and `agent worker`, several hosts) take turns
 * under one advisory lock: the first applies them, the others then find none pending — without it,
 * two would run the same CREATE TYPE at once and one would fail on a duplicate catalog row.
 */
export async function migrateToLatest(url: string): Promise<string[]> {
  const lock = new Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const ds = createDataSource(url);
    await ds.initialize();
    try {
      const applied = await ds.runMigrations({ transaction: 'each' });
      return applied.map((m) => m.name);
    } finally {
      await ds.destroy();
    }
  } finally {
    // Ending the session releases the lock, also when a migration failed.
    await lock.end();
  }
}

/** Whether every known migration has been applied (readiness: "migrations at head"). */
export async function migrationsAtHead(url: string): Promise<{ atHead: boolean; pending: string[] }> {
  const ds = createDataSource(url);
  await ds.initialize();
  try {
    const pending = await ds.showMigrations();
    if (!pending) return { atHead: true, pending: [] };
    const rows = await ds.query<{ name: string }[]>('SELECT name FROM typeorm_migrations');
    const done = new Set(rows.map((r) => r.name));
    return { atHead: false, pending: ds.migrations.map((m) => m.name ?? '').filter((n) => !done.has(n)) };
  } finally {
    await ds.destroy();
  }
}

/**
 * Refuses a server that cannot take writes (a hot standby, or `default_transaction_read_only`): the
 * process would otherwise start and then fail every write. Behind HAProxy, point DATABASE_URL at
 * the port that routes to the Patroni leader (docs/operations/ha.md).
 */
export async function assertWritablePrimary(url: string): Promise<void> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  c.on('error', () => undefined); // a cut connection fails the query below instead
  await c.connect();
  try {
    const r = await c.query<{ recovery: boolean; read_only: string }>(
      `SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only`,
    );
    const { recovery, read_only: readOnly } = r.rows[0];
    if (recovery || readOnly === 'on')
      throw new ConfigurationError(
        `DATABASE_URL points at a read-only server (${recovery ? 'a replica in recovery' : 'transaction_read_only is on'}): ` +
          'agent-core writes on every request and needs the primary. Point DATABASE_URL at the primary, or at ' +
          "HAProxy's leader port in a Patroni cluster (docs/operations/ha.md).",
        { name: 'DATABASE_URL', recovery, readOnly },
      );
  } finally {
    await c.end().catch(() => undefined);
  }
}
