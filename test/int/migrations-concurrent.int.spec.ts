import { MIGRATIONS } from '../../ormconfig';
import { migrateToLatest } from '../../src/adapters/postgres/connect';
import { createTestDb, type TestDb } from '../support/test-db';

/**
 * `agent api` and `agent worker` started together on a fresh database both migrate at start: they
 * take turns under one advisory lock, so each migration is applied exactly once and neither fails
 * (without the lock, two identical CREATE TYPE statements race and one fails on a duplicate row).
 */
let tdb: TestDb;
beforeAll(async () => {
  tdb = await createTestDb({ migrated: false });
});
afterAll(() => tdb.drop());

it('three processes migrating one empty database at once apply every migration exactly once', async () => {
  const results = await Promise.all([migrateToLatest(tdb.url), migrateToLatest(tdb.url), migrateToLatest(tdb.url)]);
  const applied = results.flat();
  expect(applied.sort()).toEqual(MIGRATIONS.map((m) => m.name).sort());
  expect(results.filter((r) => r.length > 0)).toHaveLength(1);
  expect(await migrateToLatest(tdb.url)).toEqual([]);
}, 120_000);
