import type { Projection } from '../../../domain/projections';
import { pgError, type Queryable } from '../database';
import { changedKeysTable } from './diff';
import type { RebuildTarget } from './rebuild-target';
import { columnList, ident, keyEquals } from './sql';

/**
 * Makes the live table's projection columns equal to the shadow's, touching only the rows listed in
 * the changed-keys table (so a repair of a healthy table writes nothing). Order matters for the
 * table's other unique indexes (e.g. one active run per session), which PostgreSQL checks row by row:
 *  1. delete live rows the log does not produce;
 *  2. update rows present on both sides in place: operational columns (runs.lease_expires_at, …) are
 *     not written, so they are preserved, and a concurrent writer blocked on such a row (a heartbeat)
 *     follows the update instead of losing its write;
 *  3. insert rows missing from live (operational columns get their defaults).
 * Step 2 can trip a unique index transiently when two rows swap a unique value; it then falls back to
 * deleting those rows and re-inserting them with their operational columns carried over, after which
 * every intermediate state is a subset of the final, consistent one.
 */
export async function replaceLiveRows(q: Queryable, t: RebuildTarget): Promise<void> {
  const changed = ident(changedKeysTable(t));
  const live = ident(t.live);
  const shadow = ident(t.shadow);
  const cols = t.projection.columns;
  await q.query(
    `DELETE FROM ${live} l USING ${changed} c
      WHERE ${keyEquals(t.keyColumns, 'l', 'c')}
        AND NOT EXISTS (SELECT 1 FROM ${shadow} s WHERE ${keyEquals(t.keyColumns, 's', 'c')})`,
  );
  const settable = cols.filter((c) => !t.keyColumns.includes(c));
  if (settable.length > 0) {
    await q.query('SAVEPOINT rebuild_update');
    try {
      await q.query(
        `UPDATE ${live} l SET ${settable.map((c) => `${ident(c)} = s.${ident(c)}`).join(', ')}
           FROM ${changed} c JOIN ${shadow} s ON ${keyEquals(t.keyColumns, 's', 'c')}
          WHERE ${keyEquals(t.keyColumns, 'l', 'c')}`,
      );
      await q.query('RELEASE SAVEPOINT rebuild_update');
    } catch (e) {
      if (pgError(e).code !== '23505') throw e;
      await q.query('ROLLBACK TO SAVEPOINT rebuild_update');
      await reinsertChangedRows(q, t);
    }
  }
  await q.query(
    `INSERT INTO ${live} (${columnList(cols)})
     SELECT ${columnList(cols, 's')} FROM ${changed} c JOIN ${shadow} s ON ${keyEquals(t.keyColumns, 's', 'c')}
      WHERE NOT EXISTS (SELECT 1 FROM ${live} l WHERE ${keyEquals(t.keyColumns, 'l', 'c')})`,
  );
}

/** Fallback of step 2: delete the changed rows, then insert the rebuilt ones with the old operational columns. */
async function reinsertChangedRows(q: Queryable, t: RebuildTarget): Promise<void> {
  const old = ident(`rebuild_old_${t.live}`);
  const live = ident(t.live);
  await q.query(`CREATE TEMP TABLE ${old} (LIKE ${live}) ON COMMIT DROP`);
  await q.query(
    `WITH gone AS (DELETE FROM ${live} l USING ${ident(changedKeysTable(t))} c WHERE ${keyEquals(t.keyColumns, 'l', 'c')} RETURNING l.*)
     INSERT INTO ${old} SELECT * FROM gone`,
  );
  const cols = [...t.projection.columns, ...t.operationalColumns];
  await q.query(
    `INSERT INTO ${live} (${columnList(cols)})
     SELECT ${columnList(t.projection.columns, 's')}${t.operationalColumns.length ? `, ${columnList(t.operationalColumns, 'o')}` : ''}
       FROM ${old} o JOIN ${ident(t.shadow)} s ON ${keyEquals(t.keyColumns, 's', 'o')}`,
  );
}

/**
 * Records the rebuild in projection_watermarks: the projection version and the last event it now
 * reflects in the global order (transaction id, id), the position a global reader resumes from: the
 * last event of the last append, found backward on `events_global_position_idx`, which holds each
 * append's first event (ADR 0058; there is no B-tree on `id` alone, ADR 0055). Runs inside
 * the lock, so every event is committed and that one is the last there is. Also starts a new
 * read-model generation (see GENERATION_SQL), so no append can write back rows folded from what
 * was read before this repair committed.
 */
export async function recordWatermarks(q: Queryable, projections: readonly Projection[]): Promise<void> {
  await q.query('UPDATE read_model_generation SET generation = generation + 1');
  await q.query(
    `INSERT INTO projection_watermarks (name, version, position, transaction_id, rebuilt_at, updated_at)
     SELECT p.name, p.version, coalesce(e.id, 0), e.transaction_id, now(), now()
       FROM unnest($1::text[], $2::int[]) AS p(name, version)
       LEFT JOIN (SELECT e.id, e.transaction_id
                    FROM (SELECT session_id, sequence, batch_events FROM events WHERE batch_events > 0
                           ORDER BY transaction_id DESC, id DESC LIMIT 1) AS h
                    JOIN events e ON e.session_id = h.session_id AND e.sequence = h.sequence + h.batch_events - 1) e ON true
     ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version, position = EXCLUDED.position,
       transaction_id = EXCLUDED.transaction_id, rebuilt_at = EXCLUDED.rebuilt_at, updated_at = EXCLUDED.updated_at`,
    [projections.map((p) => p.name), projections.map((p) => p.version)],
  );
}
