import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { TEMPLATE_DB, withDatabase } from './global-setup';

export interface TestDb {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

function adminUrl(): string {
  const url = process.env.TEST_PG_ADMIN_URL;
  if (!url)
    throw new Error('TEST_PG_ADMIN_URL is not set: run the suite through jest (global setup starts PostgreSQL)');
  return url;
}

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: adminUrl() });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database for one test file: migrated (cloned from the template) or empty. */
export async function createTestDb(opts: { migrated?: boolean } = {}): Promise<TestDb> {
  const name = `agent_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = opts.migrated === false ? 'template0' : TEMPLATE_DB;
  // CREATE DATABASE ... TEMPLATE fails if another session is copying the same template at that
  // instant; retry briefly, since parallel jest workers do exactly that.
  for (let i = 0; ; i++) {
    try {
      await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
      break;
    } catch (e) {
      if (i >= 20 || !String((e as Error).message).includes('is being accessed by other users')) throw e;
      await new Promise((r) => setTimeout(r, 100 + i * 50));
    }
  }
  const url = withDatabase(adminUrl(), name);
  // AGENT_TEST_KEEP_DBS=1 keeps every file's database, so `agent projections rebuild --verify` can be
  // run over the whole suite's data afterwards (scripts/verify-test-dbs.sh).
  const keep = process.env.AGENT_TEST_KEEP_DBS === '1';
  return {
    url,
    name,
    drop: () =>
      keep
        ? Promise.resolve()
        : admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
