import type { StoredEvent } from '../../../domain/events/payloads';
import type { Queryable } from '../database';
import { decodeEvent, EVENT_COLUMNS, type EventRow } from '../event-codec';

export interface EventPagesOptions {
  readonly batchSize: number;
  /** Only these sessions (the catch-up); default every session. */
  readonly sessionIds?: readonly string[];
}

/**
 * Streams the log ordered by (session_id, sequence) in pages, using keyset pagination on the
 * `events_session_sequence_key` index (no OFFSET, no long-lived cursor or snapshot, so it holds no
 * locks and no old snapshot between pages). Every row goes through `decodeEvent`, so upcasters apply.
 * The next page is requested before the current one is handed out, overlapping I/O with the fold.
 */
export async function* eventPages(q: Queryable, opts: EventPagesOptions): AsyncGenerator<StoredEvent[]> {
  let next: Promise<EventRow[]> | null = fetchPage(q, opts, null);
  while (next) {
    const rows: EventRow[] = await next;
    const last = rows[rows.length - 1];
    next =
      last && rows.length === opts.batchSize
        ? fetchPage(q, opts, { sessionId: last.session_id, sequence: String(last.sequence) })
        : null;
    // A consumer that stops early must not leave the prefetch as an unhandled rejection.
    next?.catch(() => undefined);
    if (rows.length > 0) yield rows.map(decodeEvent);
  }
}

async function fetchPage(
  q: Queryable,
  opts: EventPagesOptions,
  after: { sessionId: string; sequence: string } | null,
): Promise<EventRow[]> {
  const values: unknown[] = [opts.batchSize];
  const where: string[] = [];
  if (after) {
    values.push(after.sessionId, after.sequence);
    where.push(`(session_id, sequence) > ($2::uuid, $3::bigint)`);
  }
  if (opts.sessionIds) {
    values.push(opts.sessionIds);
    where.push(`session_id = ANY($${values.length}::uuid[])`);
  }
  const res = await q.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY session_id, sequence LIMIT $1`,
    values,
  );
  return res.rows;
}
