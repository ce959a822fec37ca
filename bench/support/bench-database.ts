import * as path from 'node:path';
import { Client } from 'pg';
import { connectDatabase, ensureDatabase, migrateToLatest } from '../../src/adapters/postgres/connect';

/** A migrated throwaway database for one benchmark run. */
export interface BenchDatabase {
  readonly url: string;
  readonly name: string;
  /** Where the server comes from, for the report. */
  readonly server: string;
  /** Drops the database and stops the embedded server, if one was started. */
  close(): Promise<void>;
}

/**
 * Uses the server in DATABASE_URL, or starts the embedded PostgreSQL in `$AGENT_DATA_DIR/bench` (its
 * own cluster, so a running app or test server is not disturbed), and creates a fresh, migrated
 * `agent_bench_<timestamp>` database so figures never depend on earlier data.
 */
export async function openBenchDatabase(log: (line: string) => void): Promise<BenchDatabase> {
  const databaseUrl = process.env.DATABASE_URL?.trim() || null;
  const handle = await connectDatabase({
    databaseUrl,
    dataDir: path.resolve(process.env.AGENT_DATA_DIR ?? '.data', 'bench'),
    log,
  });
  const adminUrl = handle.embedded ? handle.embedded.adminUrl : handle.url;
  const name = `agent_bench_${Date.now()}`;
  try {
    await ensureDatabase(adminUrl, name);
    const url = withDatabase(adminUrl, name);
    await migrateToLatest(url);
    return {
      url,
      name,
      server: handle.embedded ? `embedded PostgreSQL on port ${handle.embedded.port}` : 'DATABASE_URL',
      close: async () => {
        try {
          await dropDatabase(adminUrl, name);
        } finally {
          await handle.close();
        }
      },
    };
  } catch (e) {
    await dropDatabase(adminUrl, name).catch(() => undefined);
    await handle.close();
    throw e;
  }
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await c.end();
  }
}
