import { ConflictError, InvalidStateTransition, type AgentError } from '../errors';
import type { EventPayloads, EventType, NewEvent } from '../events/payloads';
import type { FailureReason } from '../run/failure';
import type { RunLimits } from '../run/limits';
import type { MultitaskStrategy } from '../run/multitask';
import type { InterruptMode } from '../run/multitask';
import type { RunInterrupt, RunRecord } from '../run/run';
import { isTerminal, transition, type RunStatus } from '../run/status';
import { ScopeSet } from '../scopes';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

/**
 * The run aggregate as its commands need it. `absent` is a run not queued yet. Built by folding the
 * run's events (`evolve`), or from its read-model row (`runStateOf`), which is that same fold.
 */
export interface RunState {
  readonly runId: string | null;
  readonly status: RunStatus | 'absent';
  /** A cancel was requested while it ran; its worker finalizes it (plan §9.3). */
  readonly cancelRequested: boolean;
  /** It was started at least once (the consent stamp belongs to the first start only). */
  readonly everStarted: boolean;
  /** A newer message asked it to stop (`multitask_strategy: interrupt`); its stop ends it `interrupted`. */
  readonly interrupt?: RunInterrupt | null;
  /** The schedule whose occurrence queued it (issue 31): named on its `run.completed` / `run.failed`. */
  readonly scheduleId?: string | null;
}

/** The run state a read-model row stands for (the run projection folds the same events). */
export function runStateOf(
  run: Pick<RunRecord, 'id' | 'status' | 'cancelRequestedAt' | 'startedAt'> & {
    readonly interrupt?: RunInterrupt | null;
    readonly scheduleId?: string | null;
  },
): RunState {
  return {
    runId: run.id,
    status: run.status,
    cancelRequested: run.cancelRequestedAt !== null,
    everStarted: run.startedAt !== null,
    interrupt: run.interrupt ?? null,
    scheduleId: run.scheduleId ?? null,
  };
}

interface RunCommandBase {
  readonly runId: string;
  readonly actor: Actor;
}

export interface QueueRun extends RunCommandBase {
  readonly kind: 'QueueRun';
  readonly agentId: string;
  readonly agentVersion: number;
  readonly principalId: string;
  readonly modelPolicy: string;
  readonly userMessageId: string | null;
  readonly limits: RunLimits;
  readonly priority: number;
  readonly idempotencyKey: string | null;
  readonly requestHash: string | null;
  /**
   * The exact scope names the run may use, recorded on `run.queued` (ADR 0032); the decider stores
   * them sorted and unique. Compute them with `ScopeSet.forRun(submitter, agent.allowedScopes)`
   * (`domain/scopes.ts`); a run derived from another (a schedule, a subagent) passes the origin's
   * recorded set as the submitter's, so it never holds more than its origin.
   */
  readonly scopes: readonly string[];
  /** A child run of `delegate.run` (plan §27.6): its origin, recorded right after `run.queued`. */
  readonly delegation?: EventPayloads['run.delegated'];
  /** The run this one waits behind in its session's FIFO (`run.queued` v3), or none. */
  readonly queuedBehind?: string | null;
  /** The strategy that queued it behind another run (null/absent: nothing was ahead of it). */
  readonly multitaskStrategy?: MultitaskStrategy | null;
  /** A scheduled occurrence's run (issue 31): its schedule, recorded on `run.queued` v4. */
  readonly scheduleId?: string | null;
}

/**
 * A worker takes the run's lease: QUEUED (or RUNNING with an expired lease: a recovery) → RUNNING.
 * A run claimed more than `maxAttempts` times fails instead (`crash_allowance_exhausted`).
 */
export interface ClaimRun {
  readonly kind: 'ClaimRun';
  readonly runId: string;
  readonly workerId: string;
  readonly leaseEpoch: number;
  /** This claim's attempt number (the run's attempts so far + 1). */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly deadlineAt: string | null;
  /** The run's trace root (ADR 0015), or null when tracing is off. */
  readonly trace: { readonly traceId: string; readonly spanId: string } | null;
  /** The principal's trajectory-export consent row (plan §31), stamped at the first start; null: none. */
  readonly consent: { readonly status: 'granted' | 'withdrawn'; readonly version: number } | null;
  /** The run's principal, whose consent is stamped. */
  readonly principalId: string;
}

/** The lease is handed back on graceful shutdown: RUNNING → QUEUED. */
export interface ReleaseRun extends RunCommandBase {
  readonly kind: 'ReleaseRun';
  readonly workerId: string;
  readonly reason: string;
}

export interface CheckpointRun extends RunCommandBase {
  readonly kind: 'CheckpointRun';
  readonly checkpointVersion: number;
  readonly step: number;
}

/**
 * A user asks to stop the run: a QUEUED or waiting run is cancelled at once, a RUNNING one is asked
 * to stop (its worker finalizes it), a terminal one or a repeated request writes nothing.
 */
export interface RequestCancel extends RunCommandBase {
  readonly kind: 'RequestCancel';
  readonly reason: string | null;
}

/**
 * A newer message of the session stops the run (`multitask_strategy: interrupt`, issue 33): a
 * RUNNING run is asked to stop at its next safe point (its worker ends it, `InterruptRun`); a QUEUED
 * or waiting run has no worker, so it ends `interrupted` at once; a terminal one writes nothing.
 */
export interface RequestInterrupt extends RunCommandBase {
  readonly kind: 'RequestInterrupt';
  readonly byRunId: string;
  readonly mode: InterruptMode;
  readonly reason: string | null;
}

/** The run ends `interrupted` (its worker at a safe point, or at once when no worker holds it). */
export interface InterruptRun extends RunCommandBase {
  readonly kind: 'InterruptRun';
  readonly byRunId: string;
  readonly mode: InterruptMode;
  readonly reason: string | null;
}

/** The worker ends a run whose cancel was requested: RUNNING → CANCELLED. */
export interface CancelRun extends RunCommandBase {
  readonly kind: 'CancelRun';
  readonly reason: string | null;
}

export interface SuspendForApproval extends RunCommandBase {
  readonly kind: 'SuspendForApproval';
  readonly approvalId: string;
}

export interface SuspendForUser extends RunCommandBase {
  readonly kind: 'SuspendForUser';
  readonly questionId: string;
  readonly question: string;
}

/** The parent waits for the child runs its `delegate.run` call materialized (ADR 0037). */
export interface SuspendForChildren extends RunCommandBase {
  readonly kind: 'SuspendForChildren';
  readonly invocationId: string;
  readonly children: EventPayloads['run.waiting_for_children']['children'];
}

/**
 * Every child of the parent is terminal: their usage joins the parent's and the parent is re-queued
 * (WAITING_FOR_CHILDREN → QUEUED), once: refused for a parent that is not waiting for children.
 */
export interface JoinChildren extends RunCommandBase {
  readonly kind: 'JoinChildren';
  readonly invocationId: string;
  readonly children: EventPayloads['run.children_joined']['children'];
}

/** A waiting run is re-queued (WAITING_* → QUEUED) once what it waited for arrived. */
export interface ResumeRun extends RunCommandBase {
  readonly kind: 'ResumeRun';
  /** What the run must be waiting for; anything else is a ConflictError. */
  readonly awaiting: 'approval' | 'user';
  readonly reason: string;
}

/** The final answer: the assistant message and RUNNING → COMPLETED, in one decision. */
export interface CompleteRun extends RunCommandBase {
  readonly kind: 'CompleteRun';
  readonly messageId: string;
  readonly text: string;
}

/** The run fails for `reason` (failure.ts). The one place `run.failed` is decided. */
export interface FailRun extends RunCommandBase {
  readonly kind: 'FailRun';
  readonly reason: FailureReason;
  readonly message: string;
  readonly errorCode: string | null;
}

export type RunCommand =
  | QueueRun
  | ClaimRun
  | ReleaseRun
  | CheckpointRun
  | RequestCancel
  | CancelRun
  | RequestInterrupt
  | InterruptRun
  | SuspendForApproval
  | SuspendForUser
  | SuspendForChildren
  | JoinChildren
  | ResumeRun
  | CompleteRun
  | FailRun;

/** The status an event leaves a run in (as the run projection folds it). */
export function runStatusAfter(type: EventType, current: RunStatus): RunStatus {
  switch (type) {
    case 'run.queued':
    case 'run.released':
    case 'run.resumed':
      return 'queued';
    case 'run.claimed':
      return 'running';
    case 'run.waiting_for_approval':
      return 'waiting_for_approval';
    case 'run.waiting_for_user':
      return 'waiting_for_user';
    case 'run.waiting_for_children':
      return 'waiting_for_children';
    case 'run.completed':
      return 'completed';
    case 'run.failed':
      return 'failed';
    case 'run.cancelled':
      return 'cancelled';
    case 'run.interrupted':
      return 'interrupted';
    default:
      return current;
  }
}

/** The single guard of a status change (`transition`, plan §27.2), as a refusal instead of a throw. */
function blocked(state: RunState, to: RunStatus): AgentError | null {
  if (state.status === 'absent') return new InvalidStateTransition(`run ${state.runId ?? ''} does not exist`, { to });
  try {
    transition(state.status, to);
    return null;
  } catch (e) {
    return e as AgentError;
  }
}

function guarded<T extends EventType>(
  state: RunState,
  to: RunStatus,
  type: T,
  data: EventPayloads[T],
  cmd: RunCommandBase,
): Decision {
  const no = blocked(state, to);
  return no ? refuse(no) : accept(event(type, data, { runId: cmd.runId, ...cmd.actor }));
}

function requireRunning(state: RunState, what: string): AgentError | null {
  return state.status === 'running'
    ? null
    : new InvalidStateTransition(`run ${state.runId ?? ''} is ${state.status}; only a running run can ${what}`, {
        status: state.status,
      });
}

/** A scheduled run's ending names its schedule (issue 31: the notification it triggers); other runs' do not. */
function scheduleOf(state: RunState): { scheduleId?: string } {
  return state.scheduleId ? { scheduleId: state.scheduleId } : {};
}

function fail(cmd: FailRun, state: RunState): Decision {
  const { reason, message, errorCode } = cmd;
  return guarded(state, 'failed', 'run.failed', { reason, message, errorCode, ...scheduleOf(state) }, cmd);
}

function claim(cmd: ClaimRun, state: RunState): Decision {
  const header = { runId: cmd.runId, actorType: 'worker' as const, actorId: cmd.workerId };
  if (cmd.attempt > cmd.maxAttempts) {
    return fail(
      {
        kind: 'FailRun',
        runId: cmd.runId,
        actor: { actorType: 'system', actorId: cmd.workerId },
        reason: 'crash_allowance_exhausted',
        message: `run was claimed ${cmd.attempt - 1} times without finishing`,
        errorCode: null,
      },
      state,
    );
  }
  // A RUNNING run is claimed again only once its lease expired (its worker died): no status change.
  const no = state.status === 'running' ? null : blocked(state, 'running');
  if (no) return refuse(no);
  const traceId = cmd.trace?.traceId ?? null;
  const { workerId, leaseEpoch, attempt, deadlineAt } = cmd;
  return accept<NewEvent>(
    event('run.claimed', { workerId, leaseEpoch, attempt }, { ...header, traceId }),
    event('run.started', { attempt, deadlineAt, traceId, spanId: cmd.trace?.spanId ?? null }, { ...header, traceId }),
    // Plan §31: trajectory-export consent is evaluated once, at the run's first start.
    ...(state.everStarted
      ? []
      : [
          event(
            'run.consent_stamped',
            {
              principalId: cmd.principalId,
              trajectoryExport: cmd.consent ? cmd.consent.status : 'absent',
              consentVersion: cmd.consent ? cmd.consent.version : null,
            },
            { runId: cmd.runId, actorType: 'system' },
          ),
        ]),
  );
}

function requestCancel(cmd: RequestCancel, state: RunState): Decision {
  if (state.status === 'absent') return refuse(blocked(state, 'cancelled')!);
  if (isTerminal(state.status)) return accept();
  const header = { runId: cmd.runId, ...cmd.actor };
  if (state.status === 'running') {
    return state.cancelRequested ? accept() : accept(event('run.cancel_requested', { reason: cmd.reason }, header));
  }
  return guarded(state, 'cancelled', 'run.cancelled', { reason: cmd.reason }, cmd);
}

/**
 * The run's `interrupted` end. A `rollback` first records `run.rolled_back`: the run's work after
 * its user message is hidden from the context of later runs (issue 33), never deleted.
 */
function interruptedEnd(cmd: RequestInterrupt | InterruptRun, state: RunState): Decision {
  const no = blocked(state, 'interrupted');
  if (no) return refuse(no);
  const header = { runId: cmd.runId, ...cmd.actor };
  const { byRunId, mode, reason } = cmd;
  const ended = event('run.interrupted', { byRunId, mode, reason }, header);
  if (mode !== 'rollback') return accept(ended);
  return accept<NewEvent>(event('run.rolled_back', { byRunId, reason }, header), ended);
}

function requestInterrupt(cmd: RequestInterrupt, state: RunState): Decision {
  if (state.status === 'absent') return refuse(blocked(state, 'interrupted')!);
  if (isTerminal(state.status)) return accept();
  const { byRunId, mode, reason } = cmd;
  if (state.status !== 'running') return interruptedEnd(cmd, state);
  // A repeated request (a second newer message) writes nothing: the run stops once.
  if (state.interrupt) return accept();
  return accept(event('run.interrupt_requested', { byRunId, mode, reason }, { runId: cmd.runId, ...cmd.actor }));
}

function resume(cmd: ResumeRun, state: RunState): Decision {
  const waiting = cmd.awaiting === 'approval' ? 'waiting_for_approval' : 'waiting_for_user';
  if (state.status !== waiting) {
    return refuse(
      new ConflictError(
        `run ${cmd.runId} is ${state.status}, not waiting for ${cmd.awaiting === 'approval' ? 'approval' : 'user input'}`,
        { runId: cmd.runId, status: state.status },
      ),
    );
  }
  return guarded(state, 'queued', 'run.resumed', { reason: cmd.reason }, cmd);
}

function queue(cmd: QueueRun, state: RunState): Decision {
  if (state.status !== 'absent') return refuse(new ConflictError(`run ${cmd.runId} exists already`, {}));
  const header = { runId: cmd.runId, ...cmd.actor };
  const { agentId, agentVersion, principalId, modelPolicy, userMessageId, limits, priority } = cmd;
  const { idempotencyKey, requestHash } = cmd;
  const queuedBehind = cmd.queuedBehind ?? null;
  const multitaskStrategy = queuedBehind === null ? null : (cmd.multitaskStrategy ?? null);
  const queued = event(
    'run.queued',
    {
      agentId,
      agentVersion,
      principalId,
      modelPolicy,
      userMessageId,
      limits,
      priority,
      idempotencyKey,
      requestHash,
      scopes: ScopeSet.of(cmd.scopes).toJSON(),
      queuedBehind,
      multitaskStrategy,
      ...(cmd.scheduleId ? { scheduleId: cmd.scheduleId } : {}),
    },
    header,
  );
  return cmd.delegation ? accept<NewEvent>(queued, event('run.delegated', cmd.delegation, header)) : accept(queued);
}

function joinChildren(cmd: JoinChildren, state: RunState): Decision {
  if (state.status !== 'waiting_for_children')
    return refuse(
      new ConflictError(`run ${cmd.runId} is ${state.status}, not waiting for children`, {
        runId: cmd.runId,
        status: state.status,
      }),
    );
  const header = { runId: cmd.runId, ...cmd.actor };
  return accept<NewEvent>(
    event('run.children_joined', { invocationId: cmd.invocationId, children: cmd.children }, header),
    event('run.resumed', { reason: 'children_joined' }, header),
  );
}

function decide(cmd: RunCommand, state: RunState): Decision {
  const header = { runId: cmd.runId, ...('actor' in cmd ? cmd.actor : {}) };
  switch (cmd.kind) {
    case 'QueueRun':
      return queue(cmd, state);
    case 'ClaimRun':
      return claim(cmd, state);
    case 'ReleaseRun':
      return guarded(state, 'queued', 'run.released', { workerId: cmd.workerId, reason: cmd.reason }, cmd);
    case 'CheckpointRun': {
      const no = requireRunning(state, 'checkpoint');
      if (no) return refuse(no);
      const { checkpointVersion, step } = cmd;
      return accept(event('run.checkpointed', { checkpointVersion, step }, header));
    }
    case 'RequestCancel':
      return requestCancel(cmd, state);
    case 'CancelRun':
      return guarded(state, 'cancelled', 'run.cancelled', { reason: cmd.reason }, cmd);
    case 'RequestInterrupt':
      return requestInterrupt(cmd, state);
    case 'InterruptRun':
      return interruptedEnd(cmd, state);
    case 'SuspendForApproval':
      return guarded(state, 'waiting_for_approval', 'run.waiting_for_approval', { approvalId: cmd.approvalId }, cmd);
    case 'SuspendForUser': {
      const { questionId, question } = cmd;
      return guarded(state, 'waiting_for_user', 'run.waiting_for_user', { questionId, question }, cmd);
    }
    case 'SuspendForChildren': {
      const { invocationId, children } = cmd;
      return guarded(state, 'waiting_for_children', 'run.waiting_for_children', { invocationId, children }, cmd);
    }
    case 'JoinChildren':
      return joinChildren(cmd, state);
    case 'ResumeRun':
      return resume(cmd, state);
    case 'CompleteRun': {
      const no = blocked(state, 'completed');
      if (no) return refuse(no);
      const { messageId, text } = cmd;
      return accept<NewEvent>(
        event('assistant.message.completed', { messageId, text }, header),
        event('run.completed', { messageId, ...scheduleOf(state) }, header),
      );
    }
    case 'FailRun':
      return fail(cmd, state);
  }
}

function evolve(state: RunState, e: DecidedEvent): RunState {
  if (e.type === 'run.queued')
    return {
      runId: e.runId ?? null,
      status: 'queued',
      cancelRequested: false,
      everStarted: false,
      interrupt: null,
      scheduleId: e.data.scheduleId ?? null,
    };
  if (state.status === 'absent') return state;
  switch (e.type) {
    case 'run.cancel_requested':
      return { ...state, cancelRequested: true };
    case 'run.interrupt_requested':
      return { ...state, cancelRequested: true, interrupt: { mode: e.data.mode, byRunId: e.data.byRunId } };
    case 'run.interrupted':
      return { ...state, status: 'interrupted', interrupt: { mode: e.data.mode, byRunId: e.data.byRunId } };
    case 'run.started':
      return { ...state, everStarted: true };
    default: {
      const status = runStatusAfter(e.type, state.status);
      return status === state.status ? state : { ...state, status };
    }
  }
}

/**
 * The run aggregate (plan §27.2): every status change is a `transition` of domain/run/status.ts,
 * refused as InvalidStateTransition (or the ConflictError the API has always answered) when the
 * state machine does not allow it.
 */
export const runDecider: Decider<RunCommand, RunState> = {
  initialState: () => ({ runId: null, status: 'absent', cancelRequested: false, everStarted: false }),
  evolve,
  decide,
};
