import * as fs from 'node:fs';
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
import { blocksText, median, targetVerdict } from './support/block-readings';

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
 * Knobs: BENCH_SECONDS (per measurement, default 5), BENCH_BLOCKS (interleaved blocks it is split
 * into, default 10), BENCH_WARMUP_SECONDS (uncounted warm-up before each, default a third of it),
 * BENCH_SEED_EVENTS (default 100000). The ratios are printed two ways: pooled (all blocks' operations
 * over all blocks' time) and as the median of the per-block ratios (each block against the raw block
 * measured just before it).
 */
export async function runAppendBench(): Promise<void> {
  const seconds = envNumber('BENCH_SECONDS', 5);
  const seedEvents = envNumber('BENCH_SEED_EVENTS', 100_000);
  const blocks = Math.max(1, Math.round(envNumber('BENCH_BLOCKS', 10)));
  const bench = await openBenchDatabase((line) => console.error(line));
  const db = new Database(bench.url, 10);
  const store = new PgEventStore(db, systemClock);
  const rawClient = new Client({ connectionString: bench.url });
  const floorClient = new Client({ connectionString: bench.url });
  const cpu = new ServerCpu(bench.url);
  try {
    await Promise.all([rawClient.connect(), floorClient.connect(), cpu.open()]);
    const settings = await serverSettings(db);
    console.error(
      `measuring for ${seconds}s each in ${blocks} interleaved blocks, after ${warmupSeconds(seconds).toFixed(1)}s of uncounted warm-up each…`,
    );
    const raw = await rawInsert(rawClient);
    const floor = await floorAppend(floorClient);
    const oneSession = new SessionStream(store, 0);
    const eightSessions = Array.from({ length: 8 }, (_, i) => new SessionStream(store, i + 1));
    const measured = await interleaved(seconds, blocks, cpu, [
      { loops: 1, step: raw },
      { loops: 1, step: floor },
      { loops: 1, step: () => oneSession.appendNext(1) },
      { loops: 8, step: (loop) => eightSessions[loop].appendNext(1) },
    ]);
    const [rawM, floorM, one, eight] = measured;
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
      `\nagent-core append benchmark: ${bench.server}, ${settings}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)}, database ${bench.name}\n`,
    );
    const ratio = (m: Measurement) => `${(m.perSecond / rawM.perSecond).toFixed(2)}x`;
    const micros = (us: number) => (us > 0 ? us.toFixed(0) : '');
    const row = (label: string, m: Measurement, vsRaw: string, c?: CpuPerOp) => [
      label,
      formatCount(m.ops),
      m.seconds.toFixed(2),
      formatCount(m.perSecond),
      vsRaw,
      c ? micros(c.nodeMicros) : '',
      c ? micros(c.serverMicros) : '',
    ];
    printTable(
      [
        { header: 'measurement' },
        { header: 'ops', right: true },
        { header: 'seconds', right: true },
        { header: 'per second', right: true },
        { header: 'vs raw INSERT', right: true },
        { header: 'Node µs/op', right: true },
        { header: 'server µs/op', right: true },
      ],
      [
        row('raw INSERT + COMMIT, 1 client, sequential', rawM, '1.00x', rawM.cpu),
        row('floor: event row (its unique index the gate)', floorM, ratio(floorM), floorM.cpu),
        row('append 1 event, 1 session, sequential', one, ratio(one), one.cpu),
        row('append 1 event, 8 sessions concurrently', eight, ratio(eight), eight.cpu),
        row('seed: 15-event appends, 8 sessions (events)', seed, '', undefined),
        row('projection rebuild --verify (events)', measurement(rebuild.eventsReplayed, rebuild.seconds), ''),
        row(
          '  of which the replay phase (events)',
          measurement(rebuild.eventsReplayed, rebuild.eventsReplayed / replayRate),
          '',
        ),
      ],
    );
    // Each block's rate over the raw rate of the same block: on a shared VM the raw commit rate
    // itself swings by 2x within a run (steal time, the host's disk), so pairing each block with the
    // raw block measured just before it, and taking the median, is the steadier reading.
    const paired = (m: { blockRates: number[] }) => m.blockRates.map((rate, b) => rate / rawM.blockRates[b]);
    const pairedText = (r: number[]) => `median ${median(r).toFixed(2)}x (blocks ${blocksText(r)})`;
    const [oneP, eightP, floorP] = [paired(one), paired(eight), paired(floorM)];
    console.log(
      `\nvs raw INSERT block by block: 1 session ${pairedText(oneP)}; 8 sessions ${pairedText(eightP)}; floor ${pairedText(floorP)}`,
    );
    const verdict = (pooled: number, med: number) =>
      `${pooled.toFixed(2)}x pooled, ${med.toFixed(2)}x median of blocks (${targetVerdict(pooled, med, 0.6)})`;
    console.log(
      `\ntargets: appends ≥ 0.60x raw — 1 session ${verdict(one.perSecond / rawM.perSecond, median(oneP))}, ` +
        `8 sessions ${verdict(eight.perSecond / rawM.perSecond, median(eightP))}; ` +
        `rebuild ≥ 20,000 events/s — ${formatCount(rebuild.eventsPerSecond)} (${rebuild.eventsPerSecond >= 20_000 ? 'met' : 'NOT met'})`,
    );
    console.log(
      'floor = the least a correct append can write: one prepared statement that inserts the event row, its unique (session, sequence) index being the gate, ' +
        'with no projection rows, no validation and no fold; what an append costs above it is the inline projections and the Node work around them.',
    );
    console.log('µs/op: CPU time per operation, of this process (Node) and of the PostgreSQL backends (server).');
    console.log(`\nrebuild verify: ${differing} differing rows across ${rebuild.projections.length} projections`);
    if (differing > 0) {
      console.log(JSON.stringify(rebuild.projections, null, 2));
      process.exitCode = 1;
    }
  } finally {
    await rawClient.query('DROP TABLE IF EXISTS bench_scratch, bench_floor_events').catch(() => undefined);
    await Promise.all([rawClient.end(), floorClient.end(), cpu.close()]).catch(() => undefined);
    await db.close();
    await bench.close();
  }
}

function measurement(ops: number, seconds: number): Measurement {
  return { ops, seconds, perSecond: ops / seconds };
}

/** CPU time per operation: this process's, and the database backends' (from /proc). */
interface CpuPerOp {
  readonly nodeMicros: number;
  readonly serverMicros: number;
}

interface Path {
  readonly loops: number;
  readonly step: (loop: number) => Promise<number>;
}

/**
 * Measures the paths in `blocks` rounds, each path for `seconds / blocks` per round in turn, so a
 * swing in a shared machine's load hits every path alike (each path first gets its uncounted
 * warm-up). Also sums each path's CPU time, of this process and of the database's backends.
 */
async function interleaved(
  seconds: number,
  blocks: number,
  cpu: ServerCpu,
  paths: readonly Path[],
): Promise<(Measurement & { cpu: CpuPerOp; blockRates: number[] })[]> {
  for (const p of paths) await measureFor(warmupSeconds(seconds), p.loops, p.step);
  const totals = paths.map(() => ({ ops: 0, seconds: 0, nodeMicros: 0, serverMicros: 0, blockRates: [] as number[] }));
  for (let b = 0; b < blocks; b++) {
    for (const [i, p] of paths.entries()) {
      const node0 = process.cpuUsage();
      const server0 = await cpu.micros();
      const m = await measureFor(seconds / blocks, p.loops, p.step);
      const server = (await cpu.micros()) - server0;
      const node = process.cpuUsage(node0);
      const t = totals[i];
      t.ops += m.ops;
      t.seconds += m.seconds;
      t.nodeMicros += node.user + node.system;
      t.serverMicros += server;
      t.blockRates.push(m.perSecond);
    }
  }
  return totals.map((t) => ({
    ops: t.ops,
    seconds: t.seconds,
    perSecond: t.ops / t.seconds,
    cpu: { nodeMicros: t.nodeMicros / t.ops, serverMicros: t.serverMicros / t.ops },
    blockRates: t.blockRates,
  }));
}

/**
 * CPU time of the bench database's backends, read from /proc (Linux, a server on this machine);
 * reads 0 elsewhere, and the column is then left empty. The reading connection is excluded.
 */
class ServerCpu {
  private readonly client: Client;
  private readonly ticksPerSecond = 100;
  constructor(url: string) {
    this.client = new Client({ connectionString: url });
  }
  async open(): Promise<void> {
    await this.client.connect();
  }
  async close(): Promise<void> {
    await this.client.end();
  }
  async micros(): Promise<number> {
    const r = await this.client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    let ticks = 0;
    for (const { pid } of r.rows) {
      try {
        const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        ticks += Number(fields[11]) + Number(fields[12]);
      } catch {
        // Not on this machine (a remote DATABASE_URL), or the backend just exited.
      }
    }
    return (ticks * 1e6) / this.ticksPerSecond;
  }
}

async function serverSettings(db: Database): Promise<string> {
  const r = await db.query<{ v: string; fsync: string; sc: string }>(
    `SELECT current_setting('server_version') AS v, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc`,
  );
  const s = r.rows[0];
  return `PostgreSQL ${s.v}, fsync=${s.fsync}, synchronous_commit=${s.sc}`;
}

/**
 * The physical limit: one client inserting one row per statement; each statement is its own
 * transaction, so each pays a commit.
 */
async function rawInsert(c: Client): Promise<() => Promise<number>> {
  await c.query(
    'CREATE TABLE bench_scratch (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
  );
  const payload = JSON.stringify({ type: 'user.message.created', text: 'hello' });
  return async () => {
    await c.query('INSERT INTO bench_scratch (payload) VALUES ($1)', [payload]);
    return 1;
  };
}

/**
 * The floor of a correct append, for comparison: one prepared statement that inserts the event row,
 * whose `UNIQUE (session_id, sequence)` is the gate every append needs for gapless sequences (a
 * writer whose sequence was taken gets a unique violation): no projection rows, no read-model
 * generation check, no validation, no fold, no NOTIFY. It writes to a copy of `events` (same
 * columns, defaults and indexes), so the log the rebuild verifies below holds only real appends. The
 * event is a user message like the appends'.
 */
async function floorAppend(c: Client): Promise<() => Promise<number>> {
  await c.query(`CREATE TABLE bench_floor_events (LIKE events INCLUDING ALL)`);
  const sessionId = randomUUID();
  let sequence = 1;
  const text = `INSERT INTO bench_floor_events (session_id, sequence, event_type, payload_schema_version, payload, actor_type, actor_id, tenant_id, created_at)
    VALUES ($1::uuid, $2::bigint, 'user.message.created', 1, $3::jsonb, 'user', 'bench-user', $4::text, $5::timestamptz)
    RETURNING id`;
  return async () => {
    const payload = JSON.stringify({ messageId: randomUUID(), content: [{ type: 'text', text: 'What is 7 * 7?' }] });
    const r = await c.query({
      name: 'bench_floor_append',
      text,
      values: [sessionId, sequence + 1, payload, TENANT, new Date().toISOString()],
    });
    if (r.rowCount !== 1) throw new Error('floor append wrote no event row');
    sequence++;
    return 1;
  };
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
