import { Client } from 'pg';
import { createTestDb, type TestDb } from '../support/test-db';
import { createPlatform } from '../../src/composition/platform';
import { loadSettings } from '../../src/config/settings';
import { ConfigurationError } from '../../src/domain/errors';
import { ensureBuilt, startAgent } from '../support/processes';

let tdb: TestDb;

beforeAll(async () => {
  tdb = await createTestDb();
  // What a hot standby answers with: every transaction is read-only.
  const c = new Client({ connectionString: tdb.url });
  await c.connect();
  await c.query(`ALTER DATABASE ${tdb.name} SET default_transaction_read_only = on`);
  await c.end();
});
afterAll(async () => {
  await tdb.drop();
});

describe('a DATABASE_URL that points at a read-only server', () => {
  it('is refused before anything starts, with what to do', async () => {
    const start = createPlatform(loadSettings({}), { service: 'test', databaseUrl: tdb.url, quiet: true });
    await expect(start).rejects.toBeInstanceOf(ConfigurationError);
    await expect(start).rejects.toThrow(/read-only server .*needs the primary.*docs\/operations\/ha\.md/s);
  });

  it('stops `agent worker` with one clear message instead of a stream of write errors', async () => {
    ensureBuilt();
    const p = startAgent(['worker'], { DATABASE_URL: tdb.url });
    const code = await p.exited;
    expect(code).not.toBe(0);
    expect(p.output()).toMatch(/^error: DATABASE_URL points at a read-only server/m);
    expect(p.output().match(/read-only/g)?.length).toBe(1);
  }, 120_000);
});
