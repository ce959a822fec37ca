import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';

/**
 * schedules: one row per schedule (ADR 0034), keyed by the schedule's id, which is also the id of
 * its stream session. `next_fire_at` is the scheduler's due-time index (only active rows have one);
 * every value comes from the schedule's events, so the rebuild reproduces the row exactly.
 */
export const scheduleProjection: Projection = {
  name: 'schedules',
  table: 'schedules',
  version: 1,
  keyColumn: 'id',
  columns: [
    'id',
    'tenant_id',
    'principal_id',
    'status',
    'revision',
    'definition',
    'next_fire_at',
    'last_nominal_at',
    'last_run_id',
    'last_session_id',
    'consecutive_failures',
    'occurrence_count',
    'paused_reason',
    'created_at',
    'updated_at',
  ],
  keyOf: (e) => (e.type.startsWith('schedule.') ? e.sessionId : null),
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'schedule.created') {
      return {
        id: e.sessionId,
        tenant_id: e.tenantId,
        principal_id: e.data.principalId,
        status: 'active',
        revision: e.data.revision,
        definition: e.data.definition,
        next_fire_at: e.data.nextFireAt,
        last_nominal_at: null,
        last_run_id: null,
        last_session_id: null,
        consecutive_failures: 0,
        occurrence_count: 0,
        paused_reason: null,
        created_at: e.createdAt,
        updated_at: e.createdAt,
      };
    }
    if (!row) return row;
    const next = evolveRow(row, e);
    return next === row ? row : { ...next, updated_at: e.createdAt };
  },
};

function evolveRow(row: Row, e: StoredEvent): Row {
  switch (e.type) {
    case 'schedule.updated':
      return { ...row, revision: e.data.revision, definition: e.data.definition, next_fire_at: e.data.nextFireAt };
    case 'schedule.paused':
      return { ...row, status: 'paused', next_fire_at: null, paused_reason: e.data.detail ?? e.data.reason };
    case 'schedule.resumed':
      return {
        ...row,
        status: 'active',
        next_fire_at: e.data.nextFireAt,
        paused_reason: null,
        consecutive_failures: 0,
      };
    case 'schedule.cancelled':
      return { ...row, status: 'cancelled', next_fire_at: null };
    case 'schedule.occurrence.fired':
    case 'schedule.occurrence.skipped':
    case 'schedule.occurrence.failed': {
      const fired = e.type === 'schedule.occurrence.fired';
      return {
        ...row,
        // A schedule with no next firing (a one-time one, once recorded) is complete.
        status: e.data.nextFireAt === null && row.status === 'active' ? 'completed' : row.status,
        next_fire_at: e.data.nextFireAt,
        last_nominal_at: e.data.nominalAt,
        last_run_id: fired ? e.data.runId : row.last_run_id,
        last_session_id: fired ? e.data.sessionId : row.last_session_id,
        consecutive_failures:
          e.type === 'schedule.occurrence.failed' ? e.data.consecutiveFailures : fired ? 0 : row.consecutive_failures,
        occurrence_count: Number(row.occurrence_count) + 1,
      };
    }
    default:
      return row;
  }
}
