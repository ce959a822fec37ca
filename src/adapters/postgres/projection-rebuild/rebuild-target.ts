import { ConfigurationError } from '../../../domain/errors';
import type { Projection } from '../../../domain/projections';
import type { Queryable } from '../database';

/** Suffix of the shadow table a projection is rebuilt into. */
export const SHADOW_SUFFIX = '__rebuild';

/** A projection together with what the rebuild needs to know about its live table. */
export interface RebuildTarget {
  readonly projection: Projection;
  readonly live: string;
  readonly shadow: string;
  /** Primary-key columns of the live table, in key order (the projection's keyColumn, or the natural key of an insert-only table). */
  readonly keyColumns: readonly string[];
  /** Columns the projection does not own (e.g. runs.lease_expires_at); a repair must carry them over. */
  readonly operationalColumns: readonly string[];
  /** Column naming the owning session: every projection row belongs to exactly one session. */
  readonly sessionColumn: string;
}

interface ColumnInfo {
  name: string;
  generated: boolean;
  keyPosition: number | null;
}

/** Reads the live table's columns and primary key from the catalog and checks the projection fits them. */
export async function describeTarget(q: Queryable, projection: Projection): Promise<RebuildTarget> {
  const res = await q.query<ColumnInfo>(
    `SELECT a.attname AS name, a.attgenerated <> '' AS generated, array_position(i.indkey::int2[], a.attnum) AS "keyPosition"
       FROM pg_attribute a
       LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
      WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [projection.table],
  );
  if (res.rows.length === 0) {
    throw new ConfigurationError(
      `projection ${projection.name}: table ${projection.table} does not exist (migrations pending?)`,
      {
        projection: projection.name,
      },
    );
  }
  const names = res.rows.map((c) => c.name);
  const missing = projection.columns.filter((c) => !names.includes(c));
  if (missing.length > 0) {
    throw new ConfigurationError(
      `projection ${projection.name}: table ${projection.table} lacks columns ${missing.join(', ')}`,
      {
        projection: projection.name,
        missing,
      },
    );
  }
  const primaryKey = res.rows
    .filter((c) => c.keyPosition !== null)
    .sort((a, b) => a.keyPosition! - b.keyPosition!)
    .map((c) => c.name);
  const keyColumns = projection.keyColumn !== null ? [projection.keyColumn] : primaryKey;
  // Rows are matched by key for the diff and the repair; without one there is nothing to match on.
  if (keyColumns.length === 0 || keyColumns.some((k) => !projection.columns.includes(k))) {
    throw new ConfigurationError(
      `projection ${projection.name}: table ${projection.table} needs a primary key made of projection columns`,
      {
        projection: projection.name,
      },
    );
  }
  const sessionColumn = names.includes('session_id') ? 'session_id' : projection.keyColumn;
  if (sessionColumn === null) {
    throw new ConfigurationError(`projection ${projection.name}: table ${projection.table} has no session_id column`, {
      projection: projection.name,
    });
  }
  return {
    projection,
    live: projection.table,
    shadow: `${projection.table}${SHADOW_SUFFIX}`,
    keyColumns,
    operationalColumns: res.rows.filter((c) => !c.generated && !projection.columns.includes(c.name)).map((c) => c.name),
    sessionColumn,
  };
}
