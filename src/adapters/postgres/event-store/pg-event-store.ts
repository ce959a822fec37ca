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

  async readGlobal(
    after: GlobalPosition | null,
    limit: number,
  ): Promise<{ events: StoredEvent[]; position: GlobalPosition | null }> {
    const res = await this.db.query<EventRow & { transaction_id: string }>(
      `SELECT ${EVENT_COLUMNS}, transaction_id::text AS transaction_id FROM events
        WHERE (transaction_id, id) > ($1::xid8, $2::bigint)
          AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY transaction_id, id
        LIMIT $3`,
      [after?.transactionId ?? '0', after?.eventId ?? 0, limit],
    );
    const events = res.rows.map(decodeEvent);
    const lastRow = res.rows[res.rows.length - 1];
    return {
      events,
      position: lastRow ? { transactionId: lastRow.transaction_id, eventId: Number(lastRow.id) } : after,
    };
  }
}
