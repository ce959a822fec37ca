import type { StoredEvent } from '../events/payloads';
import { notificationTriggeredBy } from '../notifications/triggers';
import type { Projection, Row } from './projection';

/**
 * notifications: the inbox and the transactional outbox (ADR 0036). The notifications an event
 * triggers are decided by pure domain code (notifications/triggers.ts) and written by the same
 * append statement as the event, so a notification exists exactly when its cause committed. The
 * id is derived from the dedupe key: a trigger folded twice (a replay, the rebuild) names the same
 * row, and an existing row is kept as it is. `read_at` and `dispatched_at` are operational columns
 * (the inbox's and the notifier's), which the rebuild keeps.
 */
export const notificationProjection: Projection = {
  name: 'notifications',
  table: 'notifications',
  // v4: a scheduled run's run.completed / run.failed (v2, issue 31).
  version: 4,
  keyColumn: 'id',
  columns: [
    'id',
    'dedupe_key',
    'tenant_id',
    'session_id',
    'run_id',
    'principal_id',
    'kind',
    'subject_id',
    'summary',
    'links',
    'created_at',
  ],
  keyOf: (e) => notificationTriggeredBy(e)?.id ?? null,
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (row) return row;
    const t = notificationTriggeredBy(e);
    if (!t) return row;
    return {
      id: t.id,
      dedupe_key: t.dedupeKey,
      tenant_id: e.tenantId,
      session_id: e.sessionId,
      run_id: e.runId,
      principal_id: t.principalId,
      kind: t.kind,
      subject_id: t.subjectId,
      summary: { ...t.summary },
      links: { ...t.links },
      created_at: e.createdAt,
    };
  },
};
