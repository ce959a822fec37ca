import type { Actor } from '../domain/deciders/decider';
import type { NewEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import type { Row } from '../domain/projections';
import type { RunLimits } from '../domain/run/limits';
import type { Cadence } from '../domain/schedules/cadence';
import type {
  MisfirePolicy,
  OccurrenceFailureReason,
  OccurrenceStatus,
  ScheduleStatus,
} from '../domain/schedules/schedule';
import type { Page } from './read-models';

/** A schedule as every surface shows it: its current revision, lifecycle and next firing (UTC and local). */
export interface ScheduleView {
  readonly id: string;
  readonly status: ScheduleStatus;
  readonly revision: number;
  readonly principalId: string;
  readonly title: string;
  readonly message: string;
  readonly cadence: Cadence;
  readonly cadenceDescription: string;
  readonly timeZone: string;
  readonly agentId: string;
  readonly agentVersion: number;
  readonly scopes: readonly string[];
  readonly limits: RunLimits;
  readonly misfire: MisfirePolicy;
  readonly maxConsecutiveFailures: number;
  /** The next firing instant (UTC), null when paused, finished or cancelled. */
  readonly nextFireAt: string | null;
  /** The same instant in the schedule's own zone, with its offset. */
  readonly nextFireAtLocal: string | null;
  readonly consecutiveFailures: number;
  readonly occurrenceCount: number;
  readonly lastNominalAt: string | null;
  readonly lastRunId: string | null;
  readonly lastSessionId: string | null;
  readonly pausedReason: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** One ledger row as the API shows it (ADR 0034). */
export interface OccurrenceRecord {
  readonly id: string;
  readonly scheduleId: string;
  readonly nominalAt: string;
  readonly firedAt: string;
  readonly status: OccurrenceStatus;
  readonly revision: number;
  readonly sessionId: string | null;
  readonly runId: string | null;
  /** The run's status now (null without a run): an offline client finds the outcome here. */
  readonly runStatus: string | null;
  readonly missedCount: number;
  readonly reason: string | null;
  readonly message: string | null;
}

/** A `schedules` row with the last sequence of the schedule's stream, read in one snapshot. */
export interface LoadedSchedule {
  readonly row: Row;
  readonly lastSequence: number;
}

/**
 * The read side of schedules. Every read is limited to the principal's tenant and the principal's
 * own schedules: anything else is "not found" (null).
 */
export interface ScheduleReadModel {
  /** The row and its stream's last sequence (for a conditional append), or null. */
  load(principal: Principal, scheduleId: string): Promise<LoadedSchedule | null>;
  /** Newest first; `status` filters before the page is cut. */
  list(principal: Principal, limit: number, cursor: string | null, status: string | null): Promise<Page<Row>>;
  /** Newest nominal instant first; null when the schedule is not the principal's. */
  occurrences(
    principal: Principal,
    scheduleId: string,
    limit: number,
    cursor: string | null,
  ): Promise<Page<OccurrenceRecord> | null>;
}

/** Nudges schedulers after a schedule changed (a NOTIFY; they also wake on their own timer). */
export interface ScheduleWakeup {
  nudge(): Promise<void>;
}

/** One occurrence a scheduler transaction recorded (and committed). */
export interface RecordedOccurrence {
  readonly scheduleId: string;
  readonly nominalAt: string;
  /** True when it fired (a session and run were created with it). */
  readonly fired: boolean;
}

/** The scheduler's side of the store: claiming due schedules and recording their occurrences. */
export interface ScheduleFiring {
  /**
   * Claims up to `limit` active schedules due at `now` (`FOR UPDATE SKIP LOCKED`) and records one
   * occurrence of each, with its session and run when it fires, in one transaction. Returns what
   * it recorded, once committed; never an occurrence whose nominal instant is after `now`.
   */
  fireDue(now: string, limit: number): Promise<readonly RecordedOccurrence[]>;
  /** The earliest next firing of any active schedule, or null (the due-time index's first entry). */
  nextDueAt(): Promise<string | null>;
}

/** A claimed due schedule: its row, its previous run's status, and its stream's last sequence. */
export interface DueSchedule {
  readonly row: Row;
  readonly lastRunStatus: string | null;
  readonly lastSequence: number;
}

/** One recorded occurrence: the schedule stream's events and, when it fires, its new session's. */
export interface PlannedOccurrence {
  readonly scheduleId: string;
  readonly tenantId: string;
  readonly expectedSequence: number;
  readonly nominalAt: string;
  readonly streamEvents: readonly NewEvent[];
  readonly session: { readonly sessionId: string; readonly events: readonly NewEvent[] } | null;
}

/** A tenant admission refusal (ceilings of concurrency, rate and cost), or null. */
export type Admission = (tenantId: string) => Promise<{ reason: OccurrenceFailureReason; message: string } | null>;

/** Decides what one due schedule's occurrence is (application/schedules/occurrence-planner.ts). */
export interface OccurrencePlanning {
  plan(due: DueSchedule, now: string, admission: Admission): Promise<PlannedOccurrence>;
}

/**
 * The schedule operations the conversational schedule tools use (application/schedules/
 * schedule-service.ts implements them): every call names its principal and reaches only that
 * principal's schedules. Requests are in the API's wire shape (snake_case cadence).
 */
export interface ScheduleOperations {
  create(
    principal: Principal,
    req: Record<string, unknown>,
    opts?: { readonly idempotencyKey?: string | null; readonly actor?: Actor },
  ): Promise<{ readonly schedule: ScheduleView; readonly replayed: boolean }>;
  list(principal: Principal, limit: number, cursor: string | null, status?: string | null): Promise<Page<ScheduleView>>;
  get(principal: Principal, id: string): Promise<ScheduleView>;
  update(
    principal: Principal,
    id: string,
    patch: Record<string, unknown>,
    expectedRevision?: number | null,
    actor?: Actor,
  ): Promise<ScheduleView>;
  pause(principal: Principal, id: string, actor?: Actor, expectedRevision?: number | null): Promise<ScheduleView>;
  resume(principal: Principal, id: string, actor?: Actor, expectedRevision?: number | null): Promise<ScheduleView>;
  cancel(
    principal: Principal,
    id: string,
    reason?: string | null,
    actor?: Actor,
    expectedRevision?: number | null,
  ): Promise<ScheduleView>;
  /** The first `count` firing instants of a cadence after now (for an approval's preview). */
  preview(
    cadence: unknown,
    count: number,
  ): {
    readonly description: string;
    readonly next: readonly string[];
    readonly timeZone: string;
    readonly local: readonly string[];
  };
}
