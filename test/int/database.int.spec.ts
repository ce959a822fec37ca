import { createTestDb, type TestDb } from '../support/test-db';
import { Database, type PreparedSql } from '../../src/adapters/postgres/database';

let tdb: TestDb;
// One connection, so what a test does to "the" connection is what the next call finds.
let db: Database;

beforeAll(async () => {
  tdb = await createTestDb({ migrated: false });
  db = new Database(tdb.url, 1);
  await db.query('CREATE TABLE prepared_probe (id int PRIMARY KEY, v text)');
  await db.query(`INSERT INTO prepared_probe VALUES (1, 'a'), (2, 'b')`);
});
afterAll(async () => {
  await db.close();
  await tdb.drop();
});

const statement: PreparedSql = {
  name: 'prepared_probe_pick',
  text: 'UPDATE prepared_probe SET v = v || $2::text WHERE id = $1::int RETURNING *',
};

const pick = (id: number, suffix: string) =>
  db.transactionFromPrepared<Record<string, unknown>[], Record<string, unknown>>(
    statement,
    [String(id), `'${suffix}'`],
    async (client, first) => {
      await client.query('SELECT 1');
      return first.rows;
    },
  );

describe('Database.transactionFromPrepared', () => {
  it('runs the prepared statement as the first of its transaction and commits', async () => {
    expect(await pick(1, 'x')).toEqual([{ id: 1, v: 'ax' }]);
    expect(await pick(1, 'y')).toEqual([{ id: 1, v: 'axy' }]);
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_prepared_statements WHERE name = 'prepared_probe_pick'`,
    );
    expect(rows[0].n).toBe('1');
  });

  it('rolls the whole transaction back when the callback fails', async () => {
    await expect(
      db.transactionFromPrepared(statement, ['2', `'z'`], () => Promise.reject(new Error('boom'))),
    ).rejects.toThrow('boom');
    expect((await db.query('SELECT v FROM prepared_probe WHERE id = 2')).rows).toEqual([{ v: 'b' }]);
  });

  it('prepares again on a connection that lost the statement', async () => {
    await db.query('DISCARD ALL');
    expect(await pick(2, 'c')).toEqual([{ id: 2, v: 'bc' }]);
  });

  it('prepares again when a migration changed the shape of what the statement returns', async () => {
    expect(await pick(2, 'd')).toEqual([{ id: 2, v: 'bcd' }]);
    await db.query('ALTER TABLE prepared_probe ADD COLUMN w int');
    expect(await pick(2, 'e')).toEqual([{ id: 2, v: 'bcde', w: null }]);
  });
});
