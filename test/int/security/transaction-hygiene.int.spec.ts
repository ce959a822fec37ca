import { Database } from '../../../src/adapters/postgres/database';
import type { ModelProvider } from '../../../src/ports/model-provider';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';
import { TransactionWatch } from '../../support/transaction-watch';

/**
 * Transaction hygiene (issue 25 item 5, ADR 0042): no transaction is held on the worker's database
 * connections while a model or tool port is called. The watch (test/support/transaction-watch.ts)
 * wraps the pool's clients, the model router and the tool registry of a real platform; the first
 * block shows it catches what it must, the second runs real turns through a worker.
 */
let tdb: TestDb;
beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb.drop();
});

describe('the transaction watch (the detector itself)', () => {
  let db: Database;
  let watch: TransactionWatch;
  beforeAll(() => {
    db = new Database(tdb.url, 3);
    watch = new TransactionWatch(db.pool);
  });
  afterAll(async () => {
    await db.close();
  });
  beforeEach(() => watch.reset());

  it('reports a port entered inside Database.transaction, naming the port and the statements of the transaction', async () => {
    await db.transaction(async (client) => {
      await client.query('SELECT 1 AS inside');
      watch.enter('model', 'demo:demo');
    });

    expect(watch.violations).toEqual([
      { port: 'model', name: 'demo:demo', status: 'T', statements: ['BEGIN', 'SELECT 1 AS inside'] },
    ]);
  });

  it('reports a failed transaction not rolled back yet, and a pipelined BEGIN whose answer has not arrived', async () => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1/0').catch(() => undefined);
      watch.enter('tool', 'math.calculate');
      await client.query('ROLLBACK');
      const begin = client.query('BEGIN');
      watch.enter('tool', 'workspace.write_file');
      await begin;
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }

    // The failed statement's error may reach the client before the server's ReadyForQuery says `E`
    // (a loaded machine): either way the transaction is open and the call is reported.
    expect(watch.violations.map((v) => [v.port, v.name, v.status])).toEqual([
      ['tool', 'math.calculate', expect.stringMatching(/^[TE]$/)],
      ['tool', 'workspace.write_file', 'T'],
    ]);
  });

  it('reports nothing for autocommit statements, a committed transaction, a COMMIT on its way, or a released connection', async () => {
    await db.query('SELECT 1');
    await db.transaction(async (c) => c.query('SELECT 2'));
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const commit = client.query('COMMIT');
      watch.enter('model', 'after-commit');
      await commit;
      watch.enter('model', 'idle');
    } finally {
      client.release();
    }
    watch.enter('tool', 'released');

    expect(watch.calls).toHaveLength(3);
    expect(watch.violations).toEqual([]);
  });
});

describe('a worker running turns with model and tool calls', () => {
  let t: TestPlatform;
  let watch: TransactionWatch;
  beforeAll(async () => {
    t = await createTestPlatform(tdb.url);
    watch = new TransactionWatch(t.platform.db.pool);
    watch.watchModels(t.platform.router);
    watch.watchTools(t.platform.registry);
  });
  afterAll(async () => {
    await t.close();
  });
  beforeEach(() => watch.reset());

  /** Submits `text` and runs it to its end on a worker of its own. */
  async function turn(text: string): Promise<{ status: string; finalText: string | null }> {
    const { runId } = await t.submit(text, { modelPolicy: 'demo' });
    const worker = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 100, drainMs: 0, onlyRunId: runId });
    await worker.start();
    try {
      const status = await t.waitForTerminal(runId, 30_000);
      return { status, finalText: (await t.platform.runs.get(runId, null))?.finalText ?? null };
    } finally {
      await worker.stop();
    }
  }

  it.each([
    ['What is 17 multiplied by 23?', 'math.calculate', '391'],
    ['write hello to notes.txt', 'workspace.write_text', 'notes.txt'],
  ])(
    'runs "%s" (model, then %s) with no transaction open on any connection when a port is called',
    async (text, tool, answer) => {
      const r = await turn(text);

      expect(r).toEqual({ status: 'completed', finalText: expect.stringContaining(answer) });
      expect(watch.calls.filter((c) => c.port === 'model').length).toBeGreaterThanOrEqual(2);
      expect(watch.calls.filter((c) => c.port === 'tool').map((c) => c.name)).toEqual([tool]);
      expect(watch.violations).toEqual([]);
    },
  );

  it('fails when a transaction is left open around a model call (a provider wrapped in one, as a regression would)', async () => {
    const pool = t.platform.db.pool;
    const router = t.platform.router;
    const resolve = router.resolve.bind(router);
    // Outside the watched provider: the transaction is open when the model port is entered.
    router.resolve = (policy, needs) => {
      const route = resolve(policy, needs);
      const inner = route.provider;
      const leaky = Object.create(inner) as ModelProvider;
      leaky.stream = async function* (...args: Parameters<ModelProvider['stream']>) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query('SELECT 1 AS held_across_the_model_call');
          yield* inner.stream(...args);
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      };
      return { ...route, provider: leaky };
    };
    try {
      const r = await turn('What is 17 multiplied by 23?');

      expect(r.status).toBe('completed');
    } finally {
      router.resolve = resolve;
    }
    expect(watch.violations.length).toBeGreaterThanOrEqual(2);
    expect(watch.violations.every((v) => v.port === 'model' && v.status === 'T')).toBe(true);
    expect(watch.violations[0].statements).toEqual(['BEGIN', 'SELECT 1 AS held_across_the_model_call']);
  });
});
