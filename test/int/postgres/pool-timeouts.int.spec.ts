import { DatabaseUnavailable } from '../../../src/domain/errors';
import { Database } from '../../../src/adapters/postgres/database';
import { startFreezableProxy, type FreezableProxy } from '../../support/freezable-proxy';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

// A database that stops answering without closing its sockets (a leader killed behind HAProxy, a
// half-open connection) must cost a request a bounded wait and a 503, never a hang (issue 27).
let tdb: TestDb;
let proxy: FreezableProxy;

beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb.drop();
});
beforeEach(async () => {
  proxy = await startFreezableProxy(tdb.url);
});
afterEach(async () => {
  proxy.thaw();
  await proxy.close();
});

const elapsed = async (work: Promise<unknown>): Promise<{ ms: number; error: unknown }> => {
  const start = Date.now();
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  return { ms: Date.now() - start, error };
};

describe('the query pool against a server that went silent', () => {
  it('gives up on a connection the server never answers after the connect timeout', async () => {
    const db = new Database(proxy.url, 2, 'direct', { connectMs: 500, queryMs: 0 });
    try {
      proxy.freeze();
      const { ms, error } = await elapsed(db.query('SELECT 1'));
      expect(error).toBeInstanceOf(DatabaseUnavailable);
      expect(ms).toBeGreaterThanOrEqual(450);
      expect(ms).toBeLessThan(3_000);
    } finally {
      proxy.thaw();
      await db.close();
    }
  });

  it('gives up on a query whose answer never comes, and destroys that connection instead of reusing it', async () => {
    const db = new Database(proxy.url, 1, 'direct', { connectMs: 2_000, queryMs: 700 });
    try {
      expect((await db.transaction((c) => c.query('SELECT 1 AS one'))).rows).toEqual([{ one: 1 }]);
      proxy.freeze();
      const { ms, error } = await elapsed(db.transaction((c) => c.query('SELECT 2')));
      expect(error).toBeInstanceOf(DatabaseUnavailable);
      expect((error as Error).message).toMatch(/Query read timeout/);
      expect(ms).toBeLessThan(3_000);
      proxy.thaw();
      // The pool's one connection was destroyed: the next transaction opens a fresh one and answers
      // at once, instead of queueing behind the lost answer on the old one.
      const again = await elapsed(db.transaction((c) => c.query('SELECT 3 AS three')));
      expect(again.error).toBeNull();
      expect(again.ms).toBeLessThan(2_000);
      expect(db.pool.totalCount).toBe(1);
    } finally {
      await db.close();
    }
  });
});

describe('the API against a database that went silent', () => {
  let api: ApiHarness;
  beforeEach(async () => {
    api = await startApi(proxy.url, { databaseTimeouts: { connectMs: 1_000, queryMs: 1_500 } });
  });
  afterEach(async () => {
    proxy.thaw();
    await api.close();
  });

  it('answers every request 503 database_unavailable with Retry-After within the timeouts, then recovers', async () => {
    expect((await call(api.base, 'POST', '/v1/sessions', { body: {} })).status).toBe(201);
    proxy.freeze();
    // More requests than the pool has connections (20): the rest wait for one, and time out too.
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => call(api.base, 'POST', '/v1/sessions', { body: {} })),
    );
    const ms = Date.now() - started;
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 503));
    expect(new Set(answers.map((a) => a.body.error.code))).toEqual(new Set(['database_unavailable']));
    expect(answers[0].headers.get('retry-after')).toBe('1');
    expect(ms).toBeLessThan(8_000);
    proxy.thaw();
    expect((await call(api.base, 'POST', '/v1/sessions', { body: {} })).status).toBe(201);
  });
});
