import * as path from 'node:path';
import { createDataSource } from '../../../ormconfig';
import { readOwnerFile, startEmbeddedPostgres, type RunningPostgres } from './embedded/embedded-postgres';
import { Client } from 'pg';

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

/** Applies pending migrations (each in its own transaction). Returns the names applied. */
export async function migrateToLatest(url: string): Promise<string[]> {
  const ds = createDataSource(url);
  await ds.initialize();
  try {
    const applied = await ds.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await ds.destroy();
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
