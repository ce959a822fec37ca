import { createDataSource, MIGRATIONS } from '../../ormconfig';
import { createTestDb, type TestDb } from '../support/test-db';

const TABLES = [
  'events',
  'sessions',
  'runs',
  'checkpoints',
  'tool_invocations',
  'approvals',
  'artifacts',
  'agents',
  'idempotency_keys',
  'projection_watermarks',
  'model_calls',
];

let tdb: TestDb;
beforeAll(async () => {
  tdb = await createTestDb({ migrated: false });
});
afterAll(() => tdb.drop());

async function tables(ds: ReturnType<typeof createDataSource>): Promise<string[]> {
  const rows = await ds.query<{ table_name: string }[]>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`,
  );
  return rows.map((r) => r.table_name).sort();
}

describe('migrations', () => {
  it('run from an empty database to head, then step down and up one revision at a time', async () => {
    const ds = createDataSource(tdb.url);
    await ds.initialize();
    try {
      expect(await tables(ds)).toEqual([]);
      const applied = await ds.runMigrations({ transaction: 'each' });
      expect(applied.map((m) => m.name)).toEqual(MIGRATIONS.map((m) => m.name));
      expect(await tables(ds)).toEqual(expect.arrayContaining(TABLES));
      const atHead = await tables(ds);

      // Down one revision at a time to an empty schema…
      for (let i = MIGRATIONS.length; i > 0; i--) {
        await ds.undoLastMigration({ transaction: 'each' });
        const done = await ds.query<{ name: string }[]>('SELECT name FROM typeorm_migrations ORDER BY id');
        expect(done.map((r) => r.name)).toEqual(MIGRATIONS.slice(0, i - 1).map((m) => m.name));
      }
      expect((await tables(ds)).filter((t) => t !== 'typeorm_migrations')).toEqual([]);

      // …and up one revision at a time back to the same schema.
      for (let i = 0; i < MIGRATIONS.length; i++) {
        const migrations = ds.migrations;
        ds.migrations.splice(0, ds.migrations.length, ...migrations.slice(0, i + 1));
        await ds.runMigrations({ transaction: 'each' });
        ds.migrations.splice(0, ds.migrations.length, ...MIGRATIONS.map((M) => new M()));
      }
      expect(await tables(ds)).toEqual(atHead);
      expect(await ds.showMigrations()).toBe(false);
    } finally {
      await ds.destroy();
    }
  });
});
