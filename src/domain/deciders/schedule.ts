import { ConflictError, InvalidStateTransition, NotFoundError } from '../errors';
import type { NewEvent } from '../events/payloads';
import type { Row } from '../projections/projection';
import {
  isoInstantOf,
  type OccurrenceFailureReason,
  type ScheduleDefinition,
  type ScheduleStatus,
} from '../schedules/schedule';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

/** A schedule as its commands need it (ADR 0034); the `schedules` projection row is the same fold. */
export interface ScheduleState {
  readonly status: ScheduleStatus | 'absent';
  readonly revision: number;
  readonly definition: ScheduleDefinition | null;
  readonly nextFireAt: string | null;
  /** The latest nominal instant the ledger recorded (whatever its status), or null. */
  readonly lastNominalAt: string | null;
  readonly consecutiveFailures: number;
}

/** The state a `schedules` row stands for (the projection folds the same events); absent without one. */
export function scheduleStateOf(row: Row | undefined): ScheduleState {
  if (!row) return scheduleDecider.initialState();
  return {
    status: row.status as ScheduleStatus,
    revision: Number(row.revision),
    definition: row.definition as ScheduleDefinition,
    nextFireAt: isoInstantOf(row.next_fire_at),
    lastNominalAt: isoInstantOf(row.last_nominal_at),
    consecutiveFailures: Number(row.consecutive_failures),
  };
}

export interface CreateSchedule {
  readonly kind: 'CreateSchedule';
  readonly actor: Actor;
  readonly principalId: string;
  readonly definition: ScheduleDefinition;
  readonly nextFireAt: string | null;
}

/** A new revision; `nextFireAt` is recomputed from now by the caller (only future occurrences change). */
export interface UpdateSchedule {
  readonly kind: 'UpdateSchedule';
  readonly actor: Actor;
  /** The revision the caller edited; another revision in between is a conflict. Null: any. */
  readonly expectedRevision: number | null;
  readonly definition: ScheduleDefinition;
  readonly nextFireAt: string | null;
}

export interface PauseSchedule {
  readonly kind: 'PauseSchedule';
  readonly actor: Actor;
}

/** Resumes without backfill: `nextFireAt` is the first firing instant after now. */
export interface ResumeSchedule {
  readonly kind: 'ResumeSchedule';
  readonly actor: Actor;
  readonly nextFireAt: string | null;
}

export interface CancelSchedule {
  readonly kind: 'CancelSchedule';
  readonly actor: Actor;
  readonly reason: string | null;
}

/** What the scheduler found out about one due occurrence before deciding it. */
export type OccurrenceFacts =
  /** Authority, agent version or tenant admission refused it. */
  | { readonly kind: 'refused'; readonly reason: OccurrenceFailureReason; readonly message: string }
  /** The schedule's previous run is still active. */
  | { readonly kind: 'overlap'; readonly activeRunId: string }
  /** Past the misfire grace under the `skip` policy. */
  | { readonly kind: 'missed' }
  /** Everything holds: its session and run will be created with these ids. */
  | { readonly kind: 'runnable'; readonly sessionId: string; readonly runId: string };

/** The scheduler records the occurrence of one nominal instant (exactly one per instant). */
export interface RecordOccurrence {
  readonly kind: 'RecordOccurrence';
  readonly actor: Actor;
  readonly occurrenceId: string;
  readonly nominalAt: string;
  readonly facts: OccurrenceFacts;
  /** Earlier instants coalesced into this one after downtime. */
  readonly missedCount: number;
  /** The first firing instant after this one's (and after now), or null when there is none. */
  readonly nextFireAt: string | null;
  /** The schedule's owner, named on a failed occurrence (its notification's recipient, issue 31). */
  readonly principalId: string;
}

export type ScheduleCommand =
  CreateSchedule | UpdateSchedule | PauseSchedule | ResumeSchedule | CancelSchedule | RecordOccurrence;

const notFound = () => new NotFoundError('schedule not found', {});
const ended = (s: ScheduleState) =>
  new InvalidStateTransition(`the schedule is ${s.status}; it cannot change any more`, { status: s.status });

function decide(cmd: ScheduleCommand, s: ScheduleState): Decision {
  if (cmd.kind === 'CreateSchedule') {
    if (s.status !== 'absent') return refuse(new ConflictError('the schedule exists already', {}));
    const { principalId, definition, nextFireAt } = cmd;
    return accept(event('schedule.created', { revision: 1, principalId, definition, nextFireAt }, cmd.actor));
  }
  if (s.status === 'absent') return refuse(notFound());
  switch (cmd.kind) {
    case 'UpdateSchedule':
      return update(cmd, s);
    case 'PauseSchedule':
      if (s.status === 'paused') return accept();
      if (s.status !== 'active') return refuse(ended(s));
      return accept(event('schedule.paused', { reason: 'requested', detail: null }, cmd.actor));
    case 'ResumeSchedule':
      if (s.status === 'active') return accept();
      if (s.status !== 'paused') return refuse(ended(s));
      if (cmd.nextFireAt === null)
        return refuse(
          new InvalidStateTransition('the one-time instant passed while the schedule was paused; update or cancel it', {
            status: s.status,
          }),
        );
      return accept(event('schedule.resumed', { nextFireAt: cmd.nextFireAt }, cmd.actor));
    case 'CancelSchedule':
      if (s.status === 'cancelled') return accept();
      if (s.status === 'completed') return refuse(ended(s));
      return accept(event('schedule.cancelled', { reason: cmd.reason }, cmd.actor));
    case 'RecordOccurrence':
      return record(cmd, s);
  }
}

function update(cmd: UpdateSchedule, s: ScheduleState): Decision {
  if (s.status === 'cancelled' || s.status === 'completed') return refuse(ended(s));
  if (cmd.expectedRevision !== null && cmd.expectedRevision !== s.revision)
    return refuse(
      new ConflictError(`the schedule is at revision ${s.revision}, not ${cmd.expectedRevision}`, {
        revision: s.revision,
        expectedRevision: cmd.expectedRevision,
        reason: 'stale_revision',
      }),
    );
  const before = s.definition!;
  const changed = (Object.keys(cmd.definition) as (keyof ScheduleDefinition)[]).filter(
    (k) => JSON.stringify(cmd.definition[k]) !== JSON.stringify(before[k]),
  );
  if (changed.length === 0) return accept();
  // A paused schedule keeps no next firing: its resume computes one.
  const nextFireAt = s.status === 'paused' ? null : cmd.nextFireAt;
  return accept(
    event('schedule.updated', { revision: s.revision + 1, definition: cmd.definition, changed, nextFireAt }, cmd.actor),
  );
}

/**
 * The occurrence of one nominal instant: failed (authority, agent, admission — before any session
 * or run), skipped (overlap, or missed under `skip`), or fired. Refused unless the schedule is
 * active and the instant is later than every one recorded: the ledger never holds two occurrences
 * of one instant, nor an instant out of order.
 */
function record(cmd: RecordOccurrence, s: ScheduleState): Decision {
  if (s.status !== 'active')
    return refuse(new ConflictError(`the schedule is ${s.status}; nothing fires`, { status: s.status }));
  if (s.lastNominalAt !== null && Date.parse(cmd.nominalAt) <= Date.parse(s.lastNominalAt))
    return refuse(
      new ConflictError(`the occurrence at ${cmd.nominalAt} is recorded already`, { nominalAt: cmd.nominalAt }),
    );
  const base = { occurrenceId: cmd.occurrenceId, nominalAt: cmd.nominalAt, revision: s.revision };
  const { facts, missedCount, nextFireAt, actor } = cmd;
  switch (facts.kind) {
    case 'runnable':
      return accept(
        event(
          'schedule.occurrence.fired',
          { ...base, sessionId: facts.sessionId, runId: facts.runId, missedCount, nextFireAt },
          actor,
        ),
      );
    case 'overlap':
    case 'missed':
      return accept(
        event(
          'schedule.occurrence.skipped',
          {
            ...base,
            status: facts.kind === 'overlap' ? 'skipped_overlap' : 'missed',
            activeRunId: facts.kind === 'overlap' ? facts.activeRunId : null,
            missedCount,
            nextFireAt,
          },
          actor,
        ),
      );
    case 'refused': {
      const consecutiveFailures = s.consecutiveFailures + 1;
      const failed: NewEvent = event(
        'schedule.occurrence.failed',
        {
          ...base,
          reason: facts.reason,
          message: facts.message,
          consecutiveFailures,
          nextFireAt,
          principalId: cmd.principalId,
        },
        actor,
      );
      const limit = s.definition!.maxConsecutiveFailures;
      if (consecutiveFailures < limit || nextFireAt === null) return accept(failed);
      const detail = `${consecutiveFailures} consecutive occurrences failed; the last: ${facts.reason}`;
      return accept(failed, event('schedule.paused', { reason: 'consecutive_failures', detail }, actor));
    }
  }
}

function evolve(s: ScheduleState, e: DecidedEvent): ScheduleState {
  switch (e.type) {
    case 'schedule.created':
    case 'schedule.updated': {
      const { definition, revision, nextFireAt } = e.data;
      const status = s.status === 'absent' ? 'active' : s.status;
      return { ...s, status, definition, revision, nextFireAt };
    }
    case 'schedule.paused':
      return { ...s, status: 'paused', nextFireAt: null };
    case 'schedule.resumed':
      return { ...s, status: 'active', nextFireAt: e.data.nextFireAt, consecutiveFailures: 0 };
    case 'schedule.cancelled':
      return { ...s, status: 'cancelled', nextFireAt: null };
    case 'schedule.occurrence.fired':
    case 'schedule.occurrence.skipped':
    case 'schedule.occurrence.failed':
      return afterOccurrence(s, e.type, e.data);
    default:
      return s;
  }
}

function afterOccurrence(
  s: ScheduleState,
  type: 'schedule.occurrence.fired' | 'schedule.occurrence.skipped' | 'schedule.occurrence.failed',
  d: NewEvent<typeof type>['data'],
): ScheduleState {
  const consecutiveFailures =
    type === 'schedule.occurrence.failed'
      ? (d as NewEvent<'schedule.occurrence.failed'>['data']).consecutiveFailures
      : type === 'schedule.occurrence.fired'
        ? 0
        : s.consecutiveFailures;
  // A schedule with no next firing (a one-time one, once recorded) is complete.
  const status = d.nextFireAt === null && s.status === 'active' ? 'completed' : s.status;
  return { ...s, status, nextFireAt: d.nextFireAt, lastNominalAt: d.nominalAt, consecutiveFailures };
}

/**
 * The schedule aggregate (ADR 0034): its revisions, lifecycle and occurrence ledger, in the
 * schedule's own stream. Pure: instants, ids and the facts of a firing arrive in the command.
 */
export const scheduleDecider: Decider<ScheduleCommand, ScheduleState> = {
  initialState: () => ({
    status: 'absent',
    revision: 0,
    definition: null,
    nextFireAt: null,
    lastNominalAt: null,
    consecutiveFailures: 0,
  }),
  evolve,
  decide,
};
