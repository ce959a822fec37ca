import { ConflictError } from '../../../domain/errors';
import type { Queryable } from '../database';

/** Advisory-lock key reserved for the projection rebuild (two at once would share the shadow tables). */
const REBUILD_LOCK_KEY = 7_426_001;

/** Takes the session-level rebuild lock on this connection, or refuses when another rebuild holds it. */
export async function acquireRebuildLock(q: Queryable): Promise<void> {
  const res = await q.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [REBUILD_LOCK_KEY]);
  if (!res.rows[0]?.ok) {
    throw new ConflictError('another projection rebuild is running against this database; wait for it to finish', {
      lockKey: REBUILD_LOCK_KEY,
    });
  }
}

/** Releases it; a pooled connection outlives the rebuild, so the lock must not be left behind. */
export async function releaseRebuildLock(q: Queryable): Promise<void> {
  await q.query('SELECT pg_advisory_unlock($1)', [REBUILD_LOCK_KEY]);
}
