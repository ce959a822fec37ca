import * as os from 'node:os';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { Database } from '../src/adapters/postgres/database';
import { PgEventStore } from '../src/adapters/postgres/event-store/pg-event-store';
import { rebuildProjections } from '../src/adapters/postgres/projection-rebuild';
import { systemClock } from '../src/adapters/system-clock';
import type { NewEvent } from '../src/domain/events/payloads';
import { openBenchDatabase } from './support/bench-database';
import { measureFor, type Measurement } from './support/measure';
import { formatCount, printTable } from './support/print-table';
import { runLifecycle, sessionCreated } from './support/run-lifecycle';
import { envNumber } from './support/env';

const TENANT = 'bench';
/** Events in one `runLifecycle`. */
const RUN_EVENTS = runLifecycle(0).length;

/** Uncounted warm-up before each timed measurement (BENCH_WARMUP_SECONDS, default: a third of it, at least 1 s). */
function warmupSeconds(seconds: number): number {
  return envNumber('BENCH_WARMUP_SECONDS', Math.max(1, seconds / 3));
}

/**
 * `npm run bench -- append`: how close the event store gets to the server's commit rate, measured
 * in one run against one server so the ratios are meaningful:
 *  1. raw single-row INSERT with its own commit, one client, sequential: the physical limit (one
 *     commit = one WAL flush) that a sequential appender can at best reach;
 *  2. single-event appends through PgEventStore, one session, sequential;
 *  3. the same with 8 sessions appending concurrently (commits can share WAL flushes);
 *  4. the projection rebuild in verify mode over everything appended (a bulk seed of whole-run
 *     appends first gives it enough events to measure).
 * Knobs: BENCH_SECONDS (per measurement, default 5), BENCH_WARMUP_SECONDS (uncounted warm-up before
 * each, default a third of it), BENCH_SEED_EVENTS (default 100000).
 */
export async function runAppendBench(): Promise<void> {
  const seconds = envNumber('BENCH_SECONDS', 5);
  const seedEvents = envNumber('BENCH_SEED_EVENTS', 100_000);
  const bench = await openBenchDatabase((line) => console.error(line));
  const db = new Database(bench.url, 10);
  const store = new PgEventStore(db, systemClock);
  try {
    const settings = await serverSettings(db);
    console.error(`measuring for ${seconds}s each, after ${warmupSeconds(seconds).toFixed(1)}s of uncounted warm-up…`);
    const raw = await rawInsertRate(bench.url, seconds);
    const one = await appendRate(store, 1, seconds);
    const eight = await appendRate(store, 8, seconds);
    console.error(`seeding ~${seedEvents.toLocaleString('en-US')} events for the rebuild…`);
    const seed = await seedLog(store, seedEvents, Math.max(60, seconds * 10));
    let replayRate = 0;
    const rebuild = await rebuildProjections(db, {
      verify: true,
      onProgress: (p) => {
        if (p.phase === 'replay') replayRate = p.eventsPerSecond;
      },
    });
    const differing = rebuild.projections.reduce((n, p) => n + p.differingRows, 0);

    console.log(
      `\nagent-core append benchmark: ${bench.server}, ${settings}, ${os.cpus().length} CPUs, database ${bench.name}\n`,
    );
    const ratio = (m: Measurement) => `${(m.perSecond / raw.perSecond).toFixed(2)}x`;
    const row = (label: string, ops: number, secs: number, rate: number, vsRaw: string) => [
      label,
      formatCount(ops),
      secs.toFixed(2),
      formatCount(rate),
      vsRaw,
    ];
    printTable(
      [
        { header: 'measurement' },
        { header: 'ops', right: true },
        { header: 'seconds', right: true },
        { header: 'per second', right: true },
        { header: 'vs raw INSERT', right: true },
      ],
      [
        row('raw INSERT + COMMIT, 1 client, sequential', raw.ops, raw.seconds, raw.perSecond, '1.00x'),
        row('append 1 event, 1 session, sequential', one.ops, one.seconds, one.perSecond, ratio(one)),
        row('append 1 event, 8 sessions concurrently', eight.ops, eight.seconds, eight.perSecond, ratio(eight)),
        row('seed: 15-event appends, 8 sessions (events)', seed.ops, seed.seconds, seed.perSecond, ''),
        row(
          'projection rebuild --verify (events)',
          rebuild.eventsReplayed,
          rebuild.seconds,
          rebuild.eventsPerSecond,
          '',
        ),
        row(
          '  of which the replay phase (events)',
          rebuild.eventsReplayed,
          rebuild.eventsReplayed / replayRate,
          replayRate,
          '',
        ),
      ],
    );
    console.log(`\nrebuild verify: ${differing} differing rows across ${rebuild.projections.length} projections`);
    if (differing > 0) {
      console.log(JSON.stringify(rebuild.projections, null, 2));
      process.exitCode = 1;
    }
  } finally {
    await store.close();
    await db.close();
    await bench.close();
  }
}

async function serverSettings(db: Database): Promise<string> {
  const r = await db.query<{ v: string; fsync: string; sc: string }>(
    `SELECT current_setting('server_version') AS v, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc`,
  );
  const s = r.rows[0];
  return `PostgreSQL ${s.v}, fsync=${s.fsync}, synchronous_commit=${s.sc}`;
}

/** One client inserting one row per statement; each statement is its own transaction, so each pays a commit. */
async function rawInsertRate(url: string, seconds: number): Promise<Measurement> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(
      'CREATE TABLE bench_scratch (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
    );
    const payload = JSON.stringify({ type: 'user.message.created', text: 'hello' });
    return await measureFor(
      seconds,
      1,
      async () => {
        await c.query('INSERT INTO bench_scratch (payload) VALUES ($1)', [payload]);
        return 1;
      },
      { warmupSeconds: warmupSeconds(seconds) },
    );
  } finally {
    await c.query('DROP TABLE IF EXISTS bench_scratch').catch(() => undefined);
    await c.end();
  }
}

/** Appends one event per call, each loop in its own session, walking through run lifecycles. */
async function appendRate(store: PgEventStore, sessions: number, seconds: number): Promise<Measurement> {
  const streams = Array.from({ length: sessions }, (_, i) => new SessionStream(store, i));
  return measureFor(
    seconds,
    sessions,
    async (loop) => {
      await streams[loop].appendNext(1);
      return 1;
    },
    { warmupSeconds: warmupSeconds(seconds) },
  );
}

/** Fills the log quickly: each append writes a whole run lifecycle (15 events), 8 sessions at a time. */
async function seedLog(store: PgEventStore, events: number, maxSeconds: number): Promise<Measurement> {
  let written = 0;
  let sessionNo = 1000;
  const streams = Array.from({ length: 8 }, () => new SessionStream(store, sessionNo++));
  return measureFor(maxSeconds, streams.length, async (loop) => {
    if (written >= events) return null;
    // Start a fresh session now and then: a real log has many sessions, which the rebuild flushes one by one.
    if (streams[loop].runs >= 10 && streams[loop].idle) streams[loop] = new SessionStream(store, sessionNo++);
    const n = await streams[loop].appendNext(RUN_EVENTS);
    written += n;
    return n;
  });
}

/** One benchmark session: its creation, then run lifecycles, appended `n` events at a time. */
class SessionStream {
  private readonly sessionId = randomUUID();
  private pending: NewEvent[];
  runs = 0;

  /** Between runs: the last lifecycle was appended completely. */
  get idle(): boolean {
    return this.pending.length === 0;
  }

  constructor(
    private readonly store: PgEventStore,
    private readonly n: number,
  ) {
    this.pending = [sessionCreated(n)];
  }

  async appendNext(n: number): Promise<number> {
    if (this.pending.length === 0) {
      this.pending = runLifecycle(this.n * 1000 + this.runs);
      this.runs++;
    }
    const batch = this.pending.slice(0, n);
    this.pending = this.pending.slice(n);
    await this.store.append(this.sessionId, batch, { tenantId: TENANT });
    return batch.length;
  }
}
