import type { Row } from '../../domain/projections';
import { isoInstantOf, type ScheduleDefinition, type ScheduleStatus } from '../../domain/schedules/schedule';
import type { ScheduleCalendar } from '../../ports/schedule-calendar';
import type { ScheduleView } from '../../ports/schedules';

export type { ScheduleView };

export function scheduleViewOf(row: Row, calendar: ScheduleCalendar): ScheduleView {
  const def = row.definition as ScheduleDefinition;
  const next = isoInstantOf(row.next_fire_at);
  return {
    id: String(row.id),
    status: row.status as ScheduleStatus,
    revision: Number(row.revision),
    principalId: String(row.principal_id),
    title: def.title,
    message: def.message,
    cadence: def.cadence,
    cadenceDescription: calendar.describe(def.cadence),
    timeZone: def.cadence.timeZone,
    agentId: def.agentId,
    agentVersion: def.agentVersion,
    scopes: def.scopes,
    limits: def.limits,
    misfire: def.misfire,
    maxConsecutiveFailures: def.maxConsecutiveFailures,
    nextFireAt: next,
    nextFireAtLocal: next === null ? null : calendar.local(next, def.cadence.timeZone),
    consecutiveFailures: Number(row.consecutive_failures),
    occurrenceCount: Number(row.occurrence_count),
    lastNominalAt: isoInstantOf(row.last_nominal_at),
    lastRunId: (row.last_run_id as string | null) ?? null,
    lastSessionId: (row.last_session_id as string | null) ?? null,
    pausedReason: (row.paused_reason as string | null) ?? null,
    createdAt: isoInstantOf(row.created_at)!,
    updatedAt: isoInstantOf(row.updated_at)!,
  };
}
