import type { Row } from '../../../domain/projections';
import type { Queryable } from '../database';
import type { RebuildTarget } from './rebuild-target';
import { columnList, ident, keyEquals } from './sql';
import type { RebuildDifference } from './types';

/** Temp table (transaction-scoped) of the keys of rows that differ at the lock point. */
export function changedKeysTable(t: RebuildTarget): string {
  return `rebuild_changed_${t.live}`;
}

/** Temp table (connection-scoped) of the keys that differed in the comparison before the lock. */
export function candidateKeysTable(t: RebuildTarget): string {
  return `rebuild_candidates_${t.live}`;
}

/**
 * The full comparison, before the lock: the key of every row whose projection columns differ
 * between live and shadow (`live EXCEPT shadow` plus `shadow EXCEPT live`), into a temp table.
 * Operational columns are not compared. EXCEPT uses each type's equality and treats NULLs as equal,
 * so `1.0 = 1.00` (numeric) or jsonb key order are not differences. One statement sees one snapshot
 * of live, so the result is exact as of that instant even while appends continue.
 */
export async function collectCandidateKeys(q: Queryable, t: RebuildTarget): Promise<void> {
  const cols = columnList(t.projection.columns);
  const keys = columnList(t.keyColumns);
  const candidates = ident(candidateKeysTable(t));
  await q.query(`DROP TABLE IF EXISTS pg_temp.${candidates}`);
  await q.query(
    `CREATE TEMP TABLE ${candidates} AS
       SELECT ${keys} FROM (SELECT ${cols} FROM ${ident(t.live)} EXCEPT SELECT ${cols} FROM ${ident(t.shadow)}) a
       UNION
       SELECT ${keys} FROM (SELECT ${cols} FROM ${ident(t.shadow)} EXCEPT SELECT ${cols} FROM ${ident(t.live)}) b`,
  );
}

/**
 * The comparison at the lock point, limited to the rows that can differ then: the candidates, and
 * the rows of the sessions the locked catch-up replayed. Any other row was equal at the full
 * comparison and has not changed since: appends only write rows of their own session, and every
 * session appended to since is one the catch-up replayed. This keeps the writers' pause short.
 * Returns how many rows differ; their keys are left in `changedKeysTable(t)`.
 */
export async function collectChangedKeys(
  q: Queryable,
  t: RebuildTarget,
  replayedSessions: readonly string[],
): Promise<number> {
  const cols = columnList(t.projection.columns);
  const keys = columnList(t.keyColumns);
  const inScope = `(${keys}) IN (SELECT ${keys} FROM ${ident(candidateKeysTable(t))}) OR ${ident(t.sessionColumn)} = ANY($1::uuid[])`;
  const live = `SELECT ${cols} FROM ${ident(t.live)} WHERE ${inScope}`;
  const shadow = `SELECT ${cols} FROM ${ident(t.shadow)} WHERE ${inScope}`;
  const res = await q.query(
    `CREATE TEMP TABLE ${ident(changedKeysTable(t))} ON COMMIT DROP AS
       SELECT ${keys} FROM (${live} EXCEPT ${shadow}) a
       UNION
       SELECT ${keys} FROM (${shadow} EXCEPT ${live}) b`,
    [replayedSessions],
  );
  return res.rowCount ?? 0;
}

interface DiffRow {
  key: string;
  live_row: Row | null;
  rebuilt_row: Row | null;
  columns: string[];
}

/**
 * Describes the first `limit` differing rows by key: a row missing on one side is one entry with
 * `column: null` and the row's projection columns; a row present on both sides gives one entry per
 * differing column, compared in SQL with the column type's own equality.
 */
export async function describeDifferences(q: Queryable, t: RebuildTarget, limit: number): Promise<RebuildDifference[]> {
  const keys = columnList(t.keyColumns);
  const differing = t.projection.columns
    .map((c) => `CASE WHEN l.${ident(c)} IS DISTINCT FROM s.${ident(c)} THEN '${c.replace(/'/g, "''")}' END`)
    .join(', ');
  const res = await q.query<DiffRow>(
    `SELECT concat_ws('/', ${t.keyColumns.map((k) => `c.${ident(k)}::text`).join(', ')}) AS key,
            CASE WHEN l.ctid IS NULL THEN NULL ELSE to_jsonb(l) END AS live_row,
            CASE WHEN s.ctid IS NULL THEN NULL ELSE to_jsonb(s) END AS rebuilt_row,
            array_remove(ARRAY[${differing}]::text[], NULL) AS columns
       FROM (SELECT ${keys} FROM ${ident(changedKeysTable(t))} ORDER BY ${keys} LIMIT $1) c
       LEFT JOIN ${ident(t.live)} l ON ${keyEquals(t.keyColumns, 'l', 'c')}
       LEFT JOIN ${ident(t.shadow)} s ON ${keyEquals(t.keyColumns, 's', 'c')}
      ORDER BY ${columnList(t.keyColumns, 'c')}`,
    [limit],
  );
  const out: RebuildDifference[] = [];
  const pick = (row: Row): Row => Object.fromEntries(t.projection.columns.map((c) => [c, row[c] ?? null]));
  for (const r of res.rows) {
    if (!r.live_row || !r.rebuilt_row) {
      out.push({
        key: r.key,
        column: null,
        live: r.live_row ? pick(r.live_row) : null,
        rebuilt: r.rebuilt_row ? pick(r.rebuilt_row) : null,
        kind: r.live_row ? 'missing_in_rebuild' : 'missing_in_live',
      });
      continue;
    }
    // Equal on every column can only mean a duplicated key in the shadow: still report the row.
    const columns = r.columns.length > 0 ? r.columns : [null];
    for (const column of columns) {
      out.push({
        key: r.key,
        column,
        live: column === null ? pick(r.live_row) : (r.live_row[column] ?? null),
        rebuilt: column === null ? pick(r.rebuilt_row) : (r.rebuilt_row[column] ?? null),
        kind: 'different',
      });
    }
  }
  return out;
}
