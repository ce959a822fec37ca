import type { Queryable } from '../database';
import type { RebuildTarget } from './rebuild-target';
import { replay } from './replay';
import { PROGRESS_TABLE } from './shadow-tables';
import { ident } from './sql';
import { lastSequenceSql } from '../event-codec';

/** Sessions replayed per round of the catch-up (bounds the id arrays sent to the server). */
const SESSIONS_PER_ROUND = 1000;

/**
 * Brings the shadow tables level with the log: every session whose last sequence in the log
 * differs from the last sequence the replay folded for it (it received events after the replay read
 * it, or it is new) has its shadow rows deleted and is replayed from its first event. Sessions are
 * replayed whole because a projection row's final state depends on all its session's events.
 * Idempotent; inside the lock transaction, a rollback undoes it entirely. Returns the sessions
 * replayed and the number of events folded.
 */
export async function catchUp(
  q: Queryable,
  targets: readonly RebuildTarget[],
  batchSize: number,
  onPage?: (events: number) => void,
): Promise<{ sessionIds: string[]; events: number }> {
  const stale = await q.query<{ id: string }>(
    `SELECT s.id FROM sessions s LEFT JOIN ${ident(PROGRESS_TABLE)} p ON p.session_id = s.id
      WHERE p.last_sequence IS DISTINCT FROM ${lastSequenceSql('s.id')}
      ORDER BY s.id`,
  );
  const ids = stale.rows.map((r) => r.id);
  let events = 0;
  for (let i = 0; i < ids.length; i += SESSIONS_PER_ROUND) {
    const round = ids.slice(i, i + SESSIONS_PER_ROUND);
    for (const t of targets) {
      await q.query(`DELETE FROM ${ident(t.shadow)} WHERE ${ident(t.sessionColumn)} = ANY($1::uuid[])`, [round]);
    }
    await q.query(`DELETE FROM ${ident(PROGRESS_TABLE)} WHERE session_id = ANY($1::uuid[])`, [round]);
    events += await replay({ reader: q, writer: q, targets, batchSize, sessionIds: round, onPage });
  }
  return { sessionIds: ids, events };
}
