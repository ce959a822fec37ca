import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';
import { RUN_ENDING_EVENTS } from '../run/status';


/**
 * sessions: one row per session; `next_event_sequence` is the last sequence appended; `updated_at`
 * the last time the session's own state changed (v2; v1 moved it on every event).
 */
export const sessionProjection: Projection = {
  name: 'sessions',
  table: 'sessions',
  version: 2,
  keyColumn: 'id',
  columns: [
    'id',
    'tenant_id',
    'principal_id',
    'agent_id',
    'agent_version',
    'status',
    'title',
    'metadata',
    'next_event_sequence',
    'active_run_id',
    'last_run_id',
    'message_count',
    'created_at',
    'updated_at',
  ],
  keyOf: (e) => e.sessionId,
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'session.created') {
      return {
        id: e.sessionId,
        tenant_id: e.tenantId,
        principal_id: e.data.principalId,
        agent_id: e.data.agentId,
        agent_version: e.data.agentVersion,
        status: 'active',
        title: e.data.title,
        metadata: e.data.metadata,
        next_event_sequence: e.sequence,
        active_run_id: null,
        last_run_id: null,
        message_count: 0,
        created_at: e.createdAt,
        updated_at: e.createdAt,
      };
    }
    if (!row) return undefined; // events before session.created cannot exist; ignore defensively
    const next: Row = { ...row, next_event_sequence: e.sequence };
    switch (e.type) {
      case 'session.deleted':
        next.status = 'deleted';
        break;
      case 'user.message.created':
      case 'assistant.message.completed':
        next.message_count = Number(row.message_count ?? 0) + 1;
        break;
      case 'run.queued':
        next.active_run_id = e.runId;
        next.last_run_id = e.runId;
        break;
      default:
        if (RUN_ENDING_EVENTS.has(e.type) && row.active_run_id === e.runId) next.active_run_id = null;
    }
    // updated_at is the session's last *activity*: it moves only when the session's own state moves
    // (status, message count, active or last run), not on every event of a run inside it. That keeps
    // the indexed updated_at still for most appends, so the row update is HOT (see ADR 0014).
    if (
      next.status !== row.status ||
      next.message_count !== row.message_count ||
      next.active_run_id !== row.active_run_id ||
      next.last_run_id !== row.last_run_id
    )
      next.updated_at = e.createdAt;
    return next;
  },
};
