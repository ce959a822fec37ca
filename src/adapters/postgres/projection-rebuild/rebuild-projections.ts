/**
 * Projection rebuild: re-derives the read models from the event log and either proves the live
 * tables match (`--verify`) or repairs them. Safe to run while the system serves:
 *
 *  a. Prepare. Take an advisory lock (one rebuild at a time), then create empty UNLOGGED shadow tables
 *     `<table>__rebuild` (`LIKE <table> INCLUDING DEFAULTS`, a leftover is dropped first) for the
 *     selected projections, and a progress table (session -> last sequence folded).
 *  b. Replay, without locks. Stream the log ordered by (session_id, sequence) with keyset pagination,
 *     decode through the upcasters, fold each session through every selected `evolve` in memory and,
 *     when the session ends, bulk-insert its final rows into the shadows (`jsonb_populate_recordset`,
 *     as the append does). Memory holds one page, one session and one flush buffer. Reads and writes
 *     use two connections so they overlap. Appends continue meanwhile; (c) picks up what they add.
 *  c. Catch up, first without locks: every session whose last sequence in the log
 *     differs from the progress table (it moved on, or is new) has its shadow rows deleted and is
 *     replayed from its first event. Then compare everything, still without locks: the keys of rows
 *     whose projection columns differ (`live EXCEPT shadow` both ways; operational columns such as
 *     runs.lease_expires_at are ignored) become candidates.
 *  d. One transaction: `LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE` (every append inserts into
 *     `events`, so writers pause; readers do not), catch up again (only the sessions appended to
 *     in the last moments), and compare again, now only the candidates and the rows of those
 *     sessions: nothing else can have changed, since appends only write rows of their own session.
 *     The shadows now equal a fold of the whole log, and the comparison is exact at this point for
 *     everything the append writes (a row edited by hand after the full comparison of (c) is seen
 *     by the next rebuild).
 *     The first 20 differing rows per projection are described column by column.
 *     Verify: COMMIT without touching live tables. Repair: fix only the differing rows (delete extra,
 *     update changed in place so operational columns are kept, insert missing), upsert
 *     projection_watermarks (version, the last event's id and transaction id in the global order,
 *     rebuilt_at), COMMIT.
 *     Lock timeouts and deadlocks roll the transaction back and retry it.
 *  Finally the shadow tables are dropped, on success and on error.
 *
 * Everything proportional to the size of the log happens before the lock; writers pause only for
 * work proportional to what changed during the rebuild (plus a filtered scan of each table).
 */
import type { PoolClient } from 'pg';
import { ValidationError } from '../../../domain/errors';
import type { Projection } from '../../../domain/projections';
import type { Database } from '../database';
import { catchUp } from './catch-up';
import { collectCandidateKeys } from './diff';
import { finishUnderLock } from './finish-under-lock';
import { ProgressMeter } from './progress-meter';
import { describeTarget, type RebuildTarget } from './rebuild-target';
import { acquireRebuildLock, releaseRebuildLock } from './rebuild-lock';
import { replay } from './replay';
import { selectProjections } from './select-projections';
import { createShadowTables, dropShadowTables } from './shadow-tables';
import type { RebuildOptions, RebuildReport } from './types';

const DEFAULT_BATCH_SIZE = 5000;

/**
 * Rebuilds the selected projections (default all) from the event log; see the algorithm above.
 * Uses two connections of `db`'s pool. Throws ValidationError for an unknown projection name and
 * ConflictError when another rebuild is running or writers could not be paused.
 */
export async function rebuildProjections(db: Database, opts: RebuildOptions): Promise<RebuildReport> {
  const projections = selectProjections(opts.projections);
  const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new ValidationError(`batchSize must be a positive integer, got ${batchSize}`, { batchSize });
  }
  const startedMs = performance.now();
  const control = await db.pool.connect();
  let failed = false;
  try {
    await acquireRebuildLock(control);
    const targets: RebuildTarget[] = [];
    let report: RebuildReport;
    try {
      report = await run(db, control, targets, projections, { ...opts, batchSize }, startedMs);
    } catch (e) {
      // Best effort: the error that got us here matters more than a failed cleanup.
      await cleanUp(control, targets).catch(() => undefined);
      throw e;
    }
    await cleanUp(control, targets);
    return report;
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    // After a failure the connection may still be busy or broken: discard it (which also frees the
    // advisory lock and the temp tables) rather than hand it back to the pool.
    control.release(failed);
  }
}

async function cleanUp(control: PoolClient, targets: readonly RebuildTarget[]): Promise<void> {
  await dropShadowTables(control, targets);
  await releaseRebuildLock(control);
}

/** Steps (a) to (d); `targets` is filled as the shadow tables are planned, so the caller can drop them. */
async function run(
  db: Database,
  control: PoolClient,
  targets: RebuildTarget[],
  projections: readonly Projection[],
  opts: RebuildOptions & { batchSize: number },
  startedMs: number,
): Promise<RebuildReport> {
  const { batchSize } = opts;
  for (const p of projections) targets.push(await describeTarget(control, p));
  await createShadowTables(control, targets);
  const total = await control.query<{ n: string }>('SELECT count(*) AS n FROM events');
  const meter = new ProgressMeter(Number(total.rows[0].n), opts.onProgress);
  meter.report('prepare');
  const replayed = await withClient(db, (reader) =>
    replay({ reader, writer: control, targets, batchSize, onPage: (n) => meter.advance('replay', n) }),
  );
  const early = await catchUp(control, targets, batchSize, (n) => meter.advance('catch-up', n));
  meter.report('compare');
  for (const t of targets) await collectCandidateKeys(control, t);
  const locked = await finishUnderLock(control, targets, { verify: opts.verify, batchSize, meter });
  meter.report('done');
  const seconds = (performance.now() - startedMs) / 1000;
  const eventsReplayed = replayed + early.events + locked.events;
  return {
    eventsReplayed,
    seconds,
    eventsPerSecond: seconds > 0 ? eventsReplayed / seconds : 0,
    projections: locked.projections,
    swapped: !opts.verify,
  };
}

/** Borrows a pooled connection for `fn`; discards it after an error (a prefetch may still be running on it). */
async function withClient<T>(db: Database, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  let ok = false;
  try {
    const result = await fn(client);
    ok = true;
    return result;
  } finally {
    client.release(!ok);
  }
}
