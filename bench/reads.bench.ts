import { Client } from 'pg';
import { LOCAL_PRINCIPAL } from '../src/domain/principal';
import { EVENT_COLUMNS } from '../src/adapters/postgres/event-codec';
import { GLOBAL_PAGE_SQL, RUN_EVENTS_SQL } from '../src/adapters/postgres/event-store/pg-event-store';
import {
  SOURCES_BY_ID_SQL,
  SOURCES_BY_KEY_SQL,
  sourceKeyValues,
} from '../src/adapters/postgres/memory-records/memory-queries';
import type { GlobalPosition } from '../src/ports/event-store';
import { openBenchDatabase } from './support/bench-database';
import { median } from './support/block-readings';
import { envNumber } from './support/env';
import { printTable } from './support/print-table';
import { AgentCoreTurn } from './peers/agent-core-turn';

const QUESTION = 'What is 17 multiplied by 23?';

/**
 * The memory API's provenance read (getMemory), 3 source events a third of the log apart, moving
 * with i: by id through a B-tree on `id` (the `events_pkey` before ADR 0055, recreated for the block),
 * by id through `events_id_brin` alone (ADR 0055), and by the stream keys a memory now keeps (ADR
 * 0059), on the same client, each prepared once per block.
 */
async function timeIdLookups(
  sql: Client,
  block: number,
  time: (read: (i: number) => Promise<unknown>) => Promise<number>,
): Promise<{ btree: number; brin: number; keyed: number }> {
  const events = (
    await sql.query<{ id: string; session_id: string; sequence: string }>(
      'SELECT id, session_id, sequence FROM events ORDER BY id',
    )
  ).rows;
  const sourcesOf = (i: number) =>
    [0, 1, 2].map((k) => events[(i * 7919 + Math.floor((k * events.length) / 3)) % events.length]);
  const byId = (name: string) => (i: number) =>
    sql.query({ name, text: SOURCES_BY_ID_SQL, values: [sourcesOf(i).map((e) => e.id), LOCAL_PRINCIPAL.tenantId] });
  // As getMemory reads them: 3 sources, one statement of KEYS_PER_SOURCE_READ keys (the last repeated).
  const byKey = (i: number) =>
    sql.query({
      name: `ids_keyed_${block}`,
      text: SOURCES_BY_KEY_SQL,
      values: sourceKeyValues(
        LOCAL_PRINCIPAL.tenantId,
        sourcesOf(i).map((e) => ({ id: Number(e.id), sessionId: e.session_id, sequence: Number(e.sequence) })),
      ),
    });
  await sql.query('CREATE INDEX bench_events_id_idx ON events (id)');
  const btree = await time(byId(`ids_btree_${block}`));
  await sql.query('DROP INDEX bench_events_id_idx');
  const brin = await time(byId(`ids_brin_${block}`));
  const keyed = await time(byKey);
  return { btree, brin, keyed };
}

/**
 * `npm run bench -- reads` (issue 35, ADR 0054): the read paths the lean write path changed, against
 * what they were, on the same data. A run's events were read through an index on `events.run_id`;
 * they are now read as a range of the session's stream from `runs.first_sequence`. Both are timed in
 * interleaved blocks on one database of BENCH_READS_SESSIONS sessions × BENCH_READS_RUNS calculator
 * turns: in each block the old index is created, the old query timed, the index dropped and the
 * new query timed on the same client (each prepared once per block, as the store prepares its reads), then the store's `listRunEvents` (the index would otherwise
 * tempt the planner). A session's own reads
 * (`listAfter`) and the global reader are timed alongside for reference; they did not change. The
 * memory API's provenance read is timed by id through a B-tree on `id` and through the BRIN (ADR
 * 0055), and by the stream keys a memory keeps (ADR 0059).
 * Prints the median per-read time of each over the blocks.
 */
export async function runReadsBench(): Promise<void> {
  const sessions = envNumber('BENCH_READS_SESSIONS', 40);
  const perSession = envNumber('BENCH_READS_RUNS', 5);
  const blocks = envNumber('BENCH_READS_BLOCKS', 7);
  const reads = envNumber('BENCH_READS_PER_BLOCK', 400);
  const bench = await openBenchDatabase((line) => console.error(line));
  const sql = new Client({ connectionString: bench.url });
  await sql.connect();
  const agent = await AgentCoreTurn.open(bench.url, 1);
  try {
    console.error(`writing ${sessions} sessions × ${perSession} turns…`);
    const conversations = [];
    for (let i = 0; i < sessions; i++) conversations.push(await agent.conversation(QUESTION, perSession));
    const runIds = conversations.flatMap((c) => c.runIds);
    const sessionIds = conversations.map((c) => c.sessionId);
    await sql.query('VACUUM ANALYZE events');
    await sql.query('VACUUM ANALYZE runs');
    const pick = <T>(xs: readonly T[], i: number) => xs[(i * 7919) % xs.length];
    const timings = {
      old: [] as number[],
      range: [] as number[],
      store: [] as number[],
      session: [] as number[],
      global: [] as number[],
      oldHead: [] as number[],
      head: [] as number[],
      oldCatchUp: [] as number[],
      catchUp: [] as number[],
      idOld: [] as number[],
      idBrin: [] as number[],
      idKeyed: [] as number[],
    };
    const time = async (n: number, read: (i: number) => Promise<unknown>) => {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await read(i);
      return ((performance.now() - t0) * 1000) / n;
    };
    console.error(`${blocks} interleaved blocks of ${reads} reads each…`);
    for (let b = 0; b < blocks; b++) {
      await sql.query('CREATE INDEX bench_events_run_idx ON events (run_id, id)');
      timings.old.push(
        await time(reads, (i) =>
          sql.query({
            name: `old_run_events_${b}`,
            text: `SELECT ${EVENT_COLUMNS} FROM events WHERE run_id = $1 AND tenant_id = $2 AND sequence > $3 ORDER BY id`,
            values: [pick(runIds, i + b), LOCAL_PRINCIPAL.tenantId, 0],
          }),
        ),
      );
      await sql.query('DROP INDEX bench_events_run_idx');
      timings.range.push(
        await time(reads, (i) =>
          sql.query({
            name: `run_events_${b}`,
            text: RUN_EVENTS_SQL,
            values: [pick(runIds, i + b), LOCAL_PRINCIPAL.tenantId, 0],
          }),
        ),
      );
      timings.store.push(await time(reads, (i) => agent.store.listRunEvents(pick(runIds, i + b), LOCAL_PRINCIPAL)));
      timings.session.push(
        await time(reads, (i) => agent.store.listAfter(pick(sessionIds, i + b), 0, LOCAL_PRINCIPAL)),
      );
      timings.global.push(await time(reads / 4, () => agent.store.readGlobal(null, 500)));
      await timeGlobalReads(sql, b, reads, timings);
      const ids = await timeIdLookups(sql, b, (read) => time(reads, read));
      timings.idOld.push(ids.btree);
      timings.idBrin.push(ids.brin);
      timings.idKeyed.push(ids.keyed);
    }
    report(bench.server, sessions, perSession, timings);
  } finally {
    await agent.close();
    await sql.end();
    await bench.close();
  }
}

/** The global reader before ADR 0058: one ordered page of a B-tree over every event. */
const OLD_GLOBAL_SQL = `SELECT ${EVENT_COLUMNS}, transaction_id::text AS tx FROM events
  WHERE (transaction_id, id) > ($1::xid8, $2::bigint) AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
  ORDER BY events.transaction_id, id LIMIT $3`;

type Read = (after: GlobalPosition | null) => Promise<{ position: GlobalPosition | null; events: unknown[] }>;

/**
 * The global reader, a B-tree over every event (before ADR 0058) against the index of appends'
 * first events (after), both prepared on the same client: a live consumer's poll at the head (the
 * last ~100 events) and a catch-up from the start in pages of 500 (time per page). The full B-tree
 * is created for its turn and dropped after it.
 */
async function timeGlobalReads(
  sql: Client,
  b: number,
  reads: number,
  t: { oldHead: number[]; head: number[]; oldCatchUp: number[]; catchUp: number[] },
): Promise<void> {
  const { rows } = await sql.query<{ tx: string; id: string }>(
    'SELECT transaction_id::text AS tx, id FROM events ORDER BY transaction_id DESC, id DESC OFFSET 100 LIMIT 1',
  );
  const head: GlobalPosition = { transactionId: rows[0].tx, eventId: Number(rows[0].id) };
  await sql.query('CREATE INDEX bench_events_global_idx ON events (transaction_id, id)');
  const old = pageReader(sql, `old_global_${b}`, OLD_GLOBAL_SQL);
  t.oldHead.push(await timed(reads, () => old(head)));
  t.oldCatchUp.push(await perPage(old));
  await sql.query('DROP INDEX bench_events_global_idx');
  const heads = pageReader(sql, `global_${b}`, GLOBAL_PAGE_SQL);
  t.head.push(await timed(reads, () => heads(head)));
  t.catchUp.push(await perPage(heads));
}

function pageReader(sql: Client, name: string, text: string): Read {
  return async (after) => {
    const { rows } = await sql.query<{ tx: string; transaction_id?: string; id: string }>({
      name,
      text,
      values: [after?.transactionId ?? '0', after?.eventId ?? 0, 500],
    });
    const last = rows[rows.length - 1];
    const tx = last ? (last.transaction_id ?? last.tx) : null;
    return { events: rows, position: last && tx ? { transactionId: tx, eventId: Number(last.id) } : after };
  };
}

/** Reads the whole log page by page; the number of events read. */
async function drain(read: Read): Promise<number> {
  let events = 0;
  for (let at: GlobalPosition | null = null; ;) {
    const page = await read(at);
    if (page.events.length === 0) return events;
    events += page.events.length;
    at = page.position;
  }
}

async function timed(n: number, read: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await read();
  return ((performance.now() - t0) * 1000) / n;
}

async function perPage(read: Read): Promise<number> {
  const t0 = performance.now();
  const events = await drain(read);
  return ((performance.now() - t0) * 1000 * 500) / Math.max(events, 1);
}

function report(
  server: string,
  sessions: number,
  perSession: number,
  t: Record<
    | 'old'
    | 'range'
    | 'store'
    | 'session'
    | 'global'
    | 'oldHead'
    | 'head'
    | 'oldCatchUp'
    | 'catchUp'
    | 'idOld'
    | 'idBrin'
    | 'idKeyed',
    number[]
  >,
): void {
  console.log(`\nagent-core reads benchmark: ${server}, ${sessions} sessions × ${perSession} calculator turns\n`);
  const us = (xs: number[]) => `${median(xs).toFixed(0)} µs`;
  printTable(
    [{ header: 'read (median of blocks)' }, { header: 'per read', right: true }],
    [
      ["a run's events, by an index on run_id (before ADR 0054)", us(t.old)],
      ["a run's events, by its session range (ADR 0054)", us(t.range)],
      ["a run's events through the store (listRunEvents: pooled, decoded)", us(t.store)],
      ["a session's events (listAfter)", us(t.session)],
      ['a page of 500 events by global position (readGlobal, from the start)', us(t.global)],
      ['global poll at the head (~100 events behind), B-tree (before ADR 0058)', us(t.oldHead)],
      ['global poll at the head (~100 events behind), first events of appends (ADR 0058)', us(t.head)],
      ['global catch-up from the start, per 500 events, B-tree (before ADR 0058)', us(t.oldCatchUp)],
      ['global catch-up from the start, per 500 events, first events of appends (ADR 0058)', us(t.catchUp)],
      ["3 events by id (a memory's provenance), by a B-tree on id (before ADR 0055)", us(t.idOld)],
      ["3 events by id (a memory's provenance), by the BRIN on id (ADR 0055)", us(t.idBrin)],
      ["3 events by their stream keys (a memory's provenance, ADR 0059)", us(t.idKeyed)],
    ],
  );
  console.log(
    `\nthe session range vs the run index: ${(median(t.range) / median(t.old)).toFixed(2)}x the time per read ` +
      `(both prepared on the same SQL client, raw rows)`,
  );
}
