import * as path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../src/adapters/postgres/embedded/embedded-postgres';
import { migrateToLatest } from '../../src/adapters/postgres/connect';

export const TEMPLATE_DB = 'agent_test_template';

/**
 * Starts the database the suite runs against: the server in DATABASE_URL when set, otherwise an
 * embedded PostgreSQL under .data/test-postgres. Builds a migrated template database once; each test
 * file then clones its own database from it (test/support/test-db.ts).
 */
export default async function globalSetup(): Promise<void> {
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const dataDir = path.resolve(process.env.AGENT_DATA_DIR ?? '.data', 'test-postgres');
    const pg = await startEmbeddedPostgres({ dataDir, log: (l) => process.stderr.write(`${l}\n`) });
    (globalThis as { __agentTestPg?: { stop(): Promise<void> } }).__agentTestPg = pg;
    adminUrl = pg.adminUrl;
  }
  process.env.TEST_PG_ADMIN_URL = adminUrl;
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  } finally {
    await c.end();
  }
  await migrateToLatest(withDatabase(adminUrl, TEMPLATE_DB));
}

export function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}
