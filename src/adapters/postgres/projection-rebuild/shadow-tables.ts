import type { Queryable } from '../database';
import { candidateKeysTable } from './diff';
import type { RebuildTarget } from './rebuild-target';
import { ident } from './sql';

/**
 * Where the replay records, per session, the last sequence it folded. The catch-up compares it with
 * the session's last sequence in the log; keeping it in a table (not a JS map) bounds memory.
 */
export const PROGRESS_TABLE = 'projection_rebuild__progress';

/**
 * Creates empty shadow tables shaped like the live ones, plus the progress table. UNLOGGED: they are
 * scratch space (no WAL, no replication), dropped at the end. `LIKE ... INCLUDING DEFAULTS` copies
 * columns, NOT NULLs and defaults but no indexes or unique constraints, so bulk loads stay cheap.
 * A leftover from a crashed rebuild is dropped first.
 */
export async function createShadowTables(q: Queryable, targets: readonly RebuildTarget[]): Promise<void> {
  for (const t of targets) {
    await q.query(`DROP TABLE IF EXISTS ${ident(t.shadow)}`);
    await q.query(`CREATE UNLOGGED TABLE ${ident(t.shadow)} (LIKE ${ident(t.live)} INCLUDING DEFAULTS)`);
  }
  await q.query(`DROP TABLE IF EXISTS ${ident(PROGRESS_TABLE)}`);
  await q.query(
    `CREATE UNLOGGED TABLE ${ident(PROGRESS_TABLE)} (session_id uuid PRIMARY KEY, last_sequence bigint NOT NULL)`,
  );
}

/**
 * Drops the shadow and progress tables, and the candidate-key temp tables (they live as long as the
 * connection, which goes back to the pool). Idempotent; called on success and on error.
 */
export async function dropShadowTables(q: Queryable, targets: readonly RebuildTarget[]): Promise<void> {
  const tables = [...targets.map((t) => t.shadow), PROGRESS_TABLE].map(ident);
  const temps = targets.map((t) => `pg_temp.${ident(candidateKeysTable(t))}`);
  await q.query(`DROP TABLE IF EXISTS ${[...tables, ...temps].join(', ')}`);
}
