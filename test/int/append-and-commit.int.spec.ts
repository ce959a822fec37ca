import { randomUUID } from 'node:crypto';
import type { PoolClient } from 'pg';
import { Database } from '../../src/adapters/postgres/database';
import type { AppendRequest } from '../../src/adapters/postgres/event-store/pg-appender';
import { IdempotencyKeyTaken, PgEventStore } from '../../src/adapters/postgres/event-store/pg-event-store';
import { ConcurrencyConflict } from '../../src/domain/errors';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { createTestDb, type TestDb } from '../support/test-db';
import { runQueued, sessionCreated, TENANT, testClock, userMessage } from '../support/fixtures';

/**
 * `PgAppender.appendAndCommit` (the claim's last round trip): inside the caller's transaction, the
 * append's named statement and its COMMIT are written together on the pool's pipelined connection
 * (pg's `pipeline` option), one round trip. What it stores must be exactly what the ordinary append
 * stores, and a refusal must still be the typed error.
 */
let tdb: TestDb;
let db: Database;
let store: PgEventStore;

beforeAll(async () => {
  tdb = await createTestDb();
  db = new Database(tdb.url, 1); // one connection: the second append finds its statement prepared
  store = new PgEventStore(db, testClock);
});
afterAll(async () => {
  await db?.close();
  await tdb?.drop();
});

/**
 * Runs `fn` in a transaction on the pool's one client, recording what it sends: each statement's
 * text, and how many statements were still unanswered when it was written (0: it waited for them).
 */
async function inTransaction<T>(
  fn: (c: PoolClient) => Promise<T>,
): Promise<{ value: T; sent: string[]; unansweredAtSend: number[] }> {
  const client = await db.pool.connect();
  expect(client.pipeline).toBe(true);
  const sent: string[] = [];
  const unansweredAtSend: number[] = [];
  let unanswered = 0;
  const query = client.query.bind(client) as (...a: unknown[]) => unknown;
  (client as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
    const c = a[0];
    sent.push(typeof c === 'string' ? c : (c as { text: string }).text);
    unansweredAtSend.push(unanswered);
    unanswered++;
    const done = () => unanswered--;
    const out = query(...a) as Promise<unknown>;
    out.then(done, done);
    return out;
  };
  try {
    await query('BEGIN');
    const value = await fn(client);
    return { value, sent: sent.map((s) => s.replace(/\s+/g, ' ').slice(0, 40)), unansweredAtSend };
  } catch (e) {
    await query('ROLLBACK');
    throw e;
  } finally {
    (client as unknown as { query: unknown }).query = query;
    client.release();
  }
}

const tricky = `it's a \\ backslash, a "quote", a $1 and $$dollars$$, ünïcödé 🧮, a NUL-free\nnewline`;

/** The claim's way in: `appendAndCommit` of the store's appender. */
function appendAndCommit(c: PoolClient, req: AppendRequest) {
  return store.appender.appendAndCommit(c, req);
}

describe('appendAndCommit', () => {
  it('stores what the ordinary append stores, values of every kind intact, and commits in the same round trip', async () => {
    const sessions = [randomUUID(), randomUUID(), randomUUID()];
    for (const sid of sessions) await store.append(sid, [sessionCreated()], { tenantId: TENANT });
    for (const sid of sessions) {
      const { sent, unansweredAtSend } = await inTransaction((c) =>
        appendAndCommit(c, {
          sessionId: sid,
          tenantId: TENANT,
          events: [userMessage(tricky), runQueued(randomUUID(), `key-${sid}`)],
        }),
      );
      // The statement (after the state read these appends make without a preread), then the COMMIT
      // written before the statement's answer came back: one round trip for both.
      expect(sent.at(-2)).toMatch(/^WITH /);
      expect(sent.at(-1)).toBe('COMMIT');
      expect(unansweredAtSend.at(-1)).toBe(1);
    }
    for (const sid of sessions) {
      const events = await store.listAfter(sid, 0, LOCAL_PRINCIPAL);
      expect(events.map((e) => e.type)).toEqual(['session.created', 'user.message.created', 'run.queued']);
      const message = events[1];
      expect(message.type === 'user.message.created' && message.data.content).toEqual([{ type: 'text', text: tricky }]);
      const queued = events[2];
      expect(queued.type === 'run.queued' && queued.data.idempotencyKey).toBe(`key-${sid}`);
    }
    // Committed: a fresh connection sees the run rows the statement's projections wrote.
    const other = new Database(tdb.url, 1);
    try {
      const runs = await other.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM runs WHERE session_id = ANY($1::uuid[])',
        [sessions],
      );
      expect(runs.rows[0].n).toBe(3);
    } finally {
      await other.close();
    }
  });

  it('refuses with the typed error, and the caller rolls back what the transaction wrote before it', async () => {
    const sid = randomUUID();
    await store.append(sid, [sessionCreated()], { tenantId: TENANT });
    await store.append(sid, [userMessage('one'), runQueued(randomUUID(), 'taken-key')], { tenantId: TENANT });
    // Warm the statement shape on the connection, so the refusal below comes from the prepared statement.
    const other = randomUUID();
    await store.append(other, [sessionCreated()], { tenantId: TENANT });
    await inTransaction((c) =>
      appendAndCommit(c, {
        sessionId: other,
        tenantId: TENANT,
        events: [userMessage('warm'), runQueued(randomUUID(), `warm-${other}`)],
      }),
    );
    const before = await store.listAfter(sid, 0, LOCAL_PRINCIPAL);
    const sent: string[] = [];
    await expect(
      inTransaction(async (c) => {
        await c.query(`UPDATE sessions SET title = 'written before' WHERE id = $1`, [sid]);
        const q = c.query.bind(c) as (...a: unknown[]) => unknown;
        (c as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
          sent.push(typeof a[0] === 'string' ? a[0] : (a[0] as { text: string }).text);
          return q(...a);
        };
        return appendAndCommit(c, {
          sessionId: sid,
          tenantId: TENANT,
          events: [userMessage('two'), runQueued(randomUUID(), 'taken-key')],
        });
      }),
    ).rejects.toBeInstanceOf(IdempotencyKeyTaken);
    expect(sent.at(-2)).toMatch(/^WITH /);
    expect(sent.at(-1)).toBe('COMMIT');
    expect(await store.listAfter(sid, 0, LOCAL_PRINCIPAL)).toEqual(before);
    const title = await db.query<{ title: string | null }>('SELECT title FROM sessions WHERE id = $1', [sid]);
    expect(title.rows[0].title).toBeNull();
    // An expected sequence that no longer holds: nothing is sent at all.
    await expect(
      inTransaction((c) =>
        appendAndCommit(c, { sessionId: sid, tenantId: TENANT, events: [userMessage('three')], expectedSequence: 1 }),
      ),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
  });
});
