import { committed, Database, type PreparedSql } from '../../src/adapters/postgres/database';
import { createTestDb, type TestDb } from '../support/test-db';
import { havePgBouncer, startPgBouncer, type RunningPgBouncer } from '../support/pgbouncer';

/**
 * What PgBouncer 1.18's transaction mode breaks, and what the `transaction-pooler` mode of the
 * query pool does about it (ADR 0030): named statements are prepared on whichever server connection
 * a transaction got, so the next transaction of the same client may find them missing or already
 * there; unnamed statements, inlined `transactionFromPrepared` and pipelined `… ; COMMIT` work.
 */
const d = havePgBouncer('the pooling tests') ? describe : describe.skip;

let tdb: TestDb;
let bouncer: RunningPgBouncer;

beforeAll(async () => {
  if (!havePgBouncer('the pooling tests')) return;
  tdb = await createTestDb({ migrated: false });
  bouncer = await startPgBouncer(tdb.url, 2);
  const db = new Database(tdb.url, 1);
  await db.query('CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)');
  await db.query('INSERT INTO counter VALUES (1, 0)');
  await db.close();
}, 60_000);
afterAll(async () => {
  await bouncer?.stop();
  await tdb?.drop();
});

const bump: PreparedSql = { name: 'counter_bump', text: 'UPDATE counter SET n = n + $1::int WHERE id = 1 RETURNING n' };

/** 8 clients × 25 calls of `call`; the errors they met, by message. */
async function hammer(db: Database, call: (i: number) => Promise<unknown>): Promise<string[]> {
  const errors: string[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 25; i++) await call(w * 100 + i).catch((e: Error) => errors.push(e.message));
    }),
  );
  return errors;
}

d('the query pool behind PgBouncer in transaction mode', () => {
  it('breaks with named statements when the pool believes it talks to PostgreSQL directly', async () => {
    const db = new Database(bouncer.url, 8, 'direct');
    try {
      const errors = await hammer(db, (i) =>
        db.query({ name: 'probe_select', text: 'SELECT $1::int AS v', values: [i] }),
      );
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((m) => /prepared statement "probe_select" (already exists|does not exist)/.test(m))).toBe(
        true,
      );
    } finally {
      await db.close();
    }
  });

  it('sends nothing named in transaction-pooler mode: named queries, prepared transactions and pipelined commits all work', async () => {
    const db = new Database(bouncer.url, 8, 'transaction-pooler');
    try {
      expect(db.namedStatements).toBe(false);
      const named = await hammer(db, async (i) => {
        const r = await db.query<{ v: number }>({ name: 'probe_select', text: 'SELECT $1::int AS v', values: [i] });
        if (r.rows[0].v !== i) throw new Error(`answer for ${i} was ${r.rows[0].v}`);
      });
      expect(named).toEqual([]);
      const prepared = await hammer(db, () =>
        db.transactionFromPrepared(bump, ['1'], async (client, first) => {
          // The statement's answer and a pipelined pair (a query and the COMMIT behind it) on one client.
          const [after] = await Promise.all([
            client.query('SELECT n FROM counter WHERE id = 1'),
            client.query('COMMIT'),
          ]);
          if (after.rows[0].n !== first.rows[0].n) throw new Error('the pipelined read left the transaction');
          return committed(null);
        }),
      );
      expect(prepared).toEqual([]);
      expect((await db.query<{ n: number }>('SELECT n FROM counter WHERE id = 1')).rows[0].n).toBe(200);
    } finally {
      await db.close();
    }
  });
});
