import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';
import { RUN_ENDING_EVENTS } from '../run/status';
import { queueAfterEnded, queueAfterQueued, type SessionQueue } from '../run/session-queue';

/**
 * sessions: one row per session; `updated_at` is the last time the session's own state changed (v2;
 * v1 moved it on every event). v3: the row no longer carries the session's last sequence (v1-v2's
 * `next_event_sequence`): the log itself is the sequence gate (`events (session_id, sequence)` is
 * unique, ADR 0014 session 10), so an event that changes none of the session's own state leaves the
 * row as it is and the append does not write it. The last sequence is `max(sequence)` of the
 * session's events, one index probe. v4 (issue 33): `queued_run_ids`, the runs waiting behind the
 * active one (FIFO, `run.queued` v2 `queuedBehind`); when the active run ends the next becomes active.
 * v5 (issue 33): `parent_session_id` and `forked_at_sequence`, from `session.forked` (null otherwise).
 */
export const sessionProjection: Projection = {
  name: 'sessions',
  table: 'sessions',
  version: 5,
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
    'active_run_id',
    'queued_run_ids',
    'last_run_id',
    'message_count',
    'created_at',
    'updated_at',
    'parent_session_id',
    'forked_at_sequence',
  ],
  keyOf: (e) => e.sessionId,
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'session.created' || e.type === 'session.forked') return createdRow(e);
    if (!row) return undefined; // events before session.created cannot exist; ignore defensively
    const next: Row = { ...row };
    switch (e.type) {
      case 'session.deleted':
        next.status = 'deleted';
        break;
      case 'session.title.changed':
        next.title = e.data.title;
        break;
      case 'user.message.created':
      case 'assistant.message.completed':
        next.message_count = Number(row.message_count ?? 0) + 1;
        break;
      case 'run.queued':
        setQueue(next, queueAfterQueued(queueOf(row), e.runId ?? '', e.data.queuedBehind ?? null));
        next.last_run_id = e.runId;
        break;
      default:
        if (RUN_ENDING_EVENTS.has(e.type) && e.runId) setQueue(next, queueAfterEnded(queueOf(row), e.runId));
    }
    // The row changes only when the session's own state moves (status, title, message count, active or
    // last run), and `updated_at`, the session's last *activity*, moves with it; every other event (most of
    // a run's) returns the row itself, which the append then does not write (ADR 0014).
    if (
      next.status === row.status &&
      next.title === row.title &&
      next.message_count === row.message_count &&
      next.active_run_id === row.active_run_id &&
      next.queued_run_ids === row.queued_run_ids &&
      next.last_run_id === row.last_run_id
    )
      return row;
    next.updated_at = e.createdAt;
    return next;
  },
};

/** The row a session's first event creates; a fork's names its parent and fork point (v5). */
function createdRow(e: StoredEvent<'session.created' | 'session.forked'>): Row {
  const forked = e.type === 'session.forked' ? e.data : null;
  return {
    id: e.sessionId,
    tenant_id: e.tenantId,
    principal_id: e.data.principalId,
    agent_id: e.data.agentId,
    agent_version: e.data.agentVersion,
    status: 'active',
    title: e.data.title,
    metadata: e.data.metadata,
    active_run_id: null,
    queued_run_ids: [],
    last_run_id: null,
    message_count: 0,
    created_at: e.createdAt,
    updated_at: e.createdAt,
    parent_session_id: forked?.parentSessionId ?? null,
    forked_at_sequence: forked?.parentSequence ?? null,
  };
}

function queueOf(row: Row): SessionQueue {
  return {
    active: (row.active_run_id as string | null) ?? null,
    queued: (row.queued_run_ids as string[] | null | undefined) ?? [],
  };
}

/** Writes the queue into the row, keeping the row's own array when the queue did not change. */
function setQueue(next: Row, q: SessionQueue): void {
  next.active_run_id = q.active;
  const before = (next.queued_run_ids as string[] | null | undefined) ?? [];
  if (q.queued.length !== before.length || q.queued.some((id, i) => id !== before[i]))
    next.queued_run_ids = [...q.queued];
}
