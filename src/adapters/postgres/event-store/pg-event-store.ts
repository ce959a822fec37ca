import type { AppendOptions, AppendResult, EventStore, GlobalPosition } from '../../../ports/event-store';
import type { NewEvent, StoredEvent } from '../../../domain/events/payloads';
import type { Principal } from '../../../domain/principal';
import type { Database } from '../database';
import { decodeEvent, EVENT_COLUMNS, EVENT_COLUMNS_OF_E, type EventRow } from '../event-codec';
import type { Clock } from '../../../ports/clock';
import { PgAppender } from './pg-appender';

export { IdempotencyKeyTaken } from './pg-appender';

/**
 * A run's events after a sequence (`$1` run, `$2` tenant, `$3` sequence): a range of its session's
 * stream from the run's first sequence to its last, filtered by run (ADR 0054).
 */
export const RUN_EVENTS_SQL = `SELECT ${EVENT_COLUMNS_OF_E} FROM runs r
  JOIN events e ON e.session_id = r.session_id
   AND e.sequence BETWEEN GREATEST(r.first_sequence, $3 + 1) AND r.last_sequence AND e.run_id = r.id
  WHERE r.id = $1 AND e.tenant_id = $2
  ORDER BY e.sequence`;

/**
 * The next page of the global log after position ($1 transaction, $2 id), the first $3 events in
 * `(transaction_id, id)` order below the safe horizon (ADR 0058). `events_global_position_idx` holds
 * each append's first event only (`batch_events > 0`, the append's size): the appends are found in
 * order through it, the append the position is inside of first, and each one's events are read as
 * a range of its session's stream. Appends of one transaction follow each other and an append's ids
 * rise with its sequence, so (transaction, first id, sequence) is the global order. The range is a
 * lateral subquery with a LIMIT (its exact size) so that it stays a probe of the sequence key per
 * append: joined plainly, a small table is planned as a hash join over all of it, 2.5x slower.
 */
export const GLOBAL_PAGE_SQL = `WITH heads AS (
    (SELECT transaction_id, id, session_id, sequence, batch_events FROM events
      WHERE batch_events > 0 AND transaction_id = $1::xid8 AND id <= $2::bigint
      ORDER BY id DESC LIMIT 1)
    UNION ALL
    (SELECT transaction_id, id, session_id, sequence, batch_events FROM events
      WHERE batch_events > 0 AND (transaction_id, id) > ($1::xid8, $2::bigint)
        AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
      ORDER BY transaction_id, id LIMIT $3))
  SELECT ${EVENT_COLUMNS_OF_E}, e.transaction_id::text AS transaction_id
    FROM heads h
    CROSS JOIN LATERAL (
      SELECT * FROM events e
       WHERE e.session_id = h.session_id AND e.sequence BETWEEN h.sequence AND h.sequence + h.batch_events - 1
       ORDER BY e.sequence LIMIT h.batch_events) AS e
   WHERE (e.transaction_id, e.id) > ($1::xid8, $2::bigint)
   ORDER BY h.transaction_id, h.id, e.sequence
   LIMIT $3`;

/** The PostgreSQL event store: optimistic, gapless per-session sequences in one statement per append. */
export class PgEventStore implements EventStore {
  constructor(
    private readonly db: Database,
    clock: Clock,
    /** The append it shares with the run journal and the claim (one cache of session rows per process). */
    readonly appender: PgAppender = new PgAppender(db, clock),
  ) {}

  /** Drops this process's cached rows for a session (the next append reads them afresh). */
  forgetCachedState(sessionId: string): void {
    this.appender.forgetCachedState(sessionId);
  }

  async append(sessionId: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    const { events: stored, lastSequence } = await this.appender.append({
      sessionId,
      events,
      tenantId: options.tenantId,
      expectedSequence: options.expectedSequence,
    });
    return { events: stored, lastSequence };
  }

  async listAfter(sessionId: string, sequence: number, principal: Principal, limit = 1000): Promise<StoredEvent[]> {
    // Named: every SSE hub reads each append through it, so it is parsed and planned once per connection.
    const res = await this.db.query<EventRow>({
      name: 'agent_list_after',
      text: `SELECT ${EVENT_COLUMNS} FROM events WHERE session_id = $1 AND tenant_id = $2 AND sequence > $3 ORDER BY sequence LIMIT $4`,
      values: [sessionId, principal.tenantId, sequence, limit],
    });
    return res.rows.map(decodeEvent);
  }

  /**
   * A run's events: its session's stream from the run's first sequence to its last (a range of
   * `events_session_sequence_key`; ADR 0054), filtered by run. In a session, sequence order is
   * append order.
   */
  async listRunEvents(runId: string, principal: Principal, afterSequence = 0): Promise<StoredEvent[]> {
    // Named, like listAfter: planned once per connection.
    const res = await this.db.query<EventRow>({
      name: 'agent_list_run_events',
      text: RUN_EVENTS_SQL,
      values: [runId, principal.tenantId, afterSequence],
    });
    return res.rows.map(decodeEvent);
  }

  /** The next page of the global log after `after` (`GLOBAL_PAGE_SQL`). */
  async readGlobal(
    after: GlobalPosition | null,
    limit: number,
  ): Promise<{ events: StoredEvent[]; position: GlobalPosition | null }> {
    const res = await this.db.query<EventRow & { transaction_id: string }>({
      name: 'agent_read_global',
      text: GLOBAL_PAGE_SQL,
      values: [after?.transactionId ?? '0', after?.eventId ?? 0, limit],
    });
    const last = res.rows[res.rows.length - 1];
    return {
      events: res.rows.map(decodeEvent),
      position: last ? { transactionId: last.transaction_id, eventId: Number(last.id) } : after,
    };
  }
}
