import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';

/**
 * schedule_occurrences: the occurrence ledger (ADR 0034), insert-only, one row per recorded
 * nominal instant. `UNIQUE (schedule_id, nominal_at)` makes a second occurrence of one instant a
 * unique violation that fails its whole append (and the transaction that would have created its
 * session and run), whatever raced. `fired_at` is the event's commit-side time.
 */
export const scheduleOccurrenceProjection: Projection = {
  name: 'schedule_occurrences',
  table: 'schedule_occurrences',
  version: 1,
  keyColumn: null,
  columns: [
    'id',
    'schedule_id',
    'tenant_id',
    'nominal_at',
    'fired_at',
    'status',
    'revision',
    'session_id',
    'run_id',
    'missed_count',
    'reason',
    'message',
  ],
  keyOf: (e) =>
    e.type === 'schedule.occurrence.fired' ||
    e.type === 'schedule.occurrence.skipped' ||
    e.type === 'schedule.occurrence.failed'
      ? e.data.occurrenceId
      : null,
  evolve(_row: Row | undefined, e: StoredEvent): Row | undefined {
    const base = (status: string) => ({
      id: '',
      schedule_id: e.sessionId,
      tenant_id: e.tenantId,
      nominal_at: '',
      fired_at: e.createdAt,
      status,
      revision: 0,
      session_id: null,
      run_id: null,
      missed_count: 0,
      reason: null,
      message: null,
    });
    switch (e.type) {
      case 'schedule.occurrence.fired': {
        const d = e.data;
        return {
          ...base('fired'),
          id: d.occurrenceId,
          nominal_at: d.nominalAt,
          revision: d.revision,
          session_id: d.sessionId,
          run_id: d.runId,
          missed_count: d.missedCount,
        };
      }
      case 'schedule.occurrence.skipped': {
        const d = e.data;
        return {
          ...base(d.status),
          id: d.occurrenceId,
          nominal_at: d.nominalAt,
          revision: d.revision,
          // An overlap names the blocking run in its event; the ledger links only an occurrence's own run.
          missed_count: d.missedCount,
        };
      }
      case 'schedule.occurrence.failed': {
        const d = e.data;
        return {
          ...base('failed'),
          id: d.occurrenceId,
          nominal_at: d.nominalAt,
          revision: d.revision,
          reason: d.reason,
          message: d.message,
        };
      }
      default:
        return undefined;
    }
  },
};
