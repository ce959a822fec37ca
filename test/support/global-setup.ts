import * as fs from 'node:fs';
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
    // One throwaway cluster per test run, so concurrent runs never share (or stop) each other's server.
    const root = path.resolve(process.env.AGENT_DATA_DIR ?? '.data');
    removeStaleClusters(root);
    const dataDir = path.join(root, `test-postgres-${process.pid}`);
    const pg = await startEmbeddedPostgres({ dataDir, log: (l) => process.stderr.write(`${l}\n`) });
    process.env.TEST_PG_DATA_DIR = pg.dataDir;
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

function removeStaleClusters(root: string): void {
  if (!fs.existsSync(root)) return;
  for (const name of fs.readdirSync(root)) {
    const m = /^test-postgres-(\d+)$/.exec(name);
    if (!m) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch {
      fs.rmSync(path.join(root, name), { recursive: true, force: true });
      fs.rmSync(path.join(root, `${name}.owner.json`), { force: true });
    }
  }
}

export function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}
