import type { Principal } from '../../../domain/principal';
import type { Row } from '../../../domain/projections';
import { SCHEDULE_STATUSES, type OccurrenceStatus, type ScheduleStatus } from '../../../domain/schedules/schedule';
import { ValidationError } from '../../../domain/errors';
import type { Page } from '../../../ports/read-models';
import type { LoadedSchedule, OccurrenceRecord, ScheduleReadModel, ScheduleWakeup } from '../../../ports/schedules';
import type { Database } from '../database';
import { lastSequenceSql } from '../event-codec';
import { decodeCursor, encodeCursor, isoOf, UUID_PATTERN } from '../keyset-cursor';

/** The NOTIFY channel schedulers listen on: a schedule was created, changed or resumed. */
export const SCHEDULES_CHANNEL = 'agent_schedules';

/** The schedules and occurrence ledger read models, principal-scoped (ADR 0034). */
export class PgScheduleQueries implements ScheduleReadModel, ScheduleWakeup {
  constructor(private readonly db: Database) {}

  async load(principal: Principal, id: string): Promise<LoadedSchedule | null> {
    if (!UUID_PATTERN.test(id)) return null;
    // One statement, one snapshot: the sequence is the one the row was folded to.
    const r = await this.db.query<{ row: Row; last_sequence: string }>(
      `SELECT to_jsonb(s) AS row, ${lastSequenceSql('s.id')} AS last_sequence FROM schedules s
        WHERE s.id = $1 AND s.tenant_id = $2 AND s.principal_id = $3`,
      [id, principal.tenantId, principal.principalId],
    );
    const hit = r.rows[0];
    return hit ? { row: hit.row, lastSequence: Number(hit.last_sequence) } : null;
  }

  async list(principal: Principal, limit: number, cursor: string | null, status: string | null): Promise<Page<Row>> {
    if (status !== null && !SCHEDULE_STATUSES.includes(status as ScheduleStatus))
      throw new ValidationError(`status must be one of ${SCHEDULE_STATUSES.join(', ')}`, { field: 'status' });
    const values: unknown[] = [principal.tenantId, principal.principalId, limit + 1];
    const where: string[] = [];
    if (status !== null) {
      values.push(status);
      where.push(`AND s.status = $${values.length}`);
    }
    if (cursor !== null) {
      const [createdAt, id] = decodeCursor(cursor, ['string', 'string'] as const);
      if (!UUID_PATTERN.test(id) || Number.isNaN(Date.parse(createdAt))) return { items: [], nextCursor: null };
      values.push(createdAt, id);
      where.push(`AND (s.created_at, s.id) < ($${values.length - 1}::timestamptz, $${values.length}::uuid)`);
    }
    const rows = (
      await this.db.query<{ row: Row }>(
        `SELECT to_jsonb(s) AS row FROM schedules s
          WHERE s.tenant_id = $1 AND s.principal_id = $2 ${where.join(' ')}
          ORDER BY s.created_at DESC, s.id DESC LIMIT $3`,
        values,
      )
    ).rows.map((r) => r.row);
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return {
      items,
      nextCursor:
        rows.length > limit && last ? encodeCursor([isoOf(new Date(String(last.created_at))), String(last.id)]) : null,
    };
  }

  async occurrences(
    principal: Principal,
    scheduleId: string,
    limit: number,
    cursor: string | null,
  ): Promise<Page<OccurrenceRecord> | null> {
    if (!(await this.load(principal, scheduleId))) return null;
    const values: unknown[] = [scheduleId, limit + 1];
    let after = '';
    if (cursor !== null) {
      const [nominalAt] = decodeCursor(cursor, ['string'] as const);
      if (Number.isNaN(Date.parse(nominalAt))) return { items: [], nextCursor: null };
      values.push(nominalAt);
      after = 'AND o.nominal_at < $3::timestamptz';
    }
    const rows = (
      await this.db.query(
        `SELECT o.*, r.status AS run_status FROM schedule_occurrences o
           LEFT JOIN runs r ON r.id = o.run_id
          WHERE o.schedule_id = $1 ${after}
          ORDER BY o.nominal_at DESC LIMIT $2`,
        values,
      )
    ).rows;
    const items = rows.slice(0, limit).map(toOccurrence);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.nominalAt]) : null };
  }

  async nudge(): Promise<void> {
    await this.db.query(`SELECT pg_notify('${SCHEDULES_CHANNEL}', '')`);
  }
}

function toOccurrence(r: Record<string, unknown>): OccurrenceRecord {
  return {
    id: String(r.id),
    scheduleId: String(r.schedule_id),
    nominalAt: isoOf(r.nominal_at),
    firedAt: isoOf(r.fired_at),
    status: r.status as OccurrenceStatus,
    revision: Number(r.revision),
    sessionId: (r.session_id as string | null) ?? null,
    runId: (r.run_id as string | null) ?? null,
    runStatus: (r.run_status as string | null) ?? null,
    missedCount: Number(r.missed_count),
    reason: (r.reason as string | null) ?? null,
    message: (r.message as string | null) ?? null,
  };
}
