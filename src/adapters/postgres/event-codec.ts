import type { EventType, StoredEvent } from '../../domain/events/payloads';

export { draftEvents, encodeEvent } from '../event-validation';
import { upcast } from '../../domain/events/upcasters';
import { CorruptEventError } from '../../domain/errors';

export interface EventRow {
  id: string | number;
  session_id: string;
  run_id: string | null;
  sequence: string | number;
  event_type: string;
  payload_schema_version: number;
  payload: unknown;
  actor_type: string;
  actor_id: string | null;
  tenant_id: string;
  trace_id: string | null;
  created_at: Date | string;
}

/** Decodes a stored row through the upcasters; a corrupt row raises CorruptEventError naming its id. */
export function decodeEvent(row: EventRow): StoredEvent {
  const id = Number(row.id);
  let payload = row.payload;
  if (typeof payload === 'string') {
    try {
      payload = JSON.parse(payload);
    } catch {
      throw new CorruptEventError(`event ${id} has a payload that is not valid JSON`, { eventId: id });
    }
  }
  const { version, payload: data } = upcast(id, row.event_type, row.payload_schema_version, payload);
  return {
    id,
    sessionId: row.session_id,
    runId: row.run_id,
    sequence: Number(row.sequence),
    type: row.event_type as EventType,
    schemaVersion: version,
    data,
    actorType: row.actor_type,
    actorId: row.actor_id,
    tenantId: row.tenant_id,
    traceId: row.trace_id,
    createdAt: row.created_at instanceof Date ? row.created_at.toISOString() : String(row.created_at),
  } as StoredEvent;
}

/**
 * The last sequence of the session whose id is the SQL expression `sessionId` (0 before its first
 * event): the log is the sequence's only record (ADR 0022), one backward probe of
 * `events_session_sequence_key`. Every reader of a session's last sequence uses this.
 */
export function lastSequenceSql(sessionId: string): string {
  return `(SELECT coalesce(max(e.sequence), 0) FROM events e WHERE e.session_id = ${sessionId})`;
}

export const EVENT_COLUMNS =
  'id, session_id, run_id, sequence, event_type, payload_schema_version, payload, actor_type, actor_id, tenant_id, trace_id, created_at';

/**
 * The events of the runs `runs` (an SQL alias of `runs` rows) as the join condition on `events e`: a
 * run's events are in its session's stream from its first sequence to its last (a range of
 * `events_session_sequence_key`; there is no index on `run_id`, ADR 0054).
 */
export const RUN_EVENTS_JOIN = (runs: string): string =>
  `e.session_id = ${runs}.session_id AND e.sequence BETWEEN ${runs}.first_sequence AND ${runs}.last_sequence AND e.run_id = ${runs}.id`;

/** EVENT_COLUMNS qualified by the alias `e`. */
export const EVENT_COLUMNS_OF_E = EVENT_COLUMNS.split(', ')
  .map((c) => `e.${c}`)
  .join(', ');
