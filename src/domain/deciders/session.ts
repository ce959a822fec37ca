import { ConflictError, InvalidStateTransition, NotFoundError, ValidationError } from '../errors';
import {
  DEFAULT_MULTITASK_STRATEGY,
  isInterruptMode,
  type InterruptMode,
  type MultitaskStrategy,
} from '../run/multitask';
import { decideInterrupt, type InterruptState } from './run-interrupt';
import { queueAfterEnded, queueAfterQueued, queueTail } from '../run/session-queue';
import type { ContentPart } from '../conversation/items';
import { SESSION_TITLE_MAX_CHARS, titleFromMessage } from '../session-title';
import { isTerminal, RUN_ENDING_EVENTS, type RunStatus } from '../run/status';
import { accept, combine, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';
import { runDecider, runStatusAfter, type QueueRun } from './run';

/** The session aggregate as its commands need it: whether it exists, and its one non-terminal run. */
export interface SessionState {
  readonly status: 'absent' | 'active' | 'deleted';
  /** The session's title, or null until it is given one (its first message names it). */
  readonly title: string | null;
  /** The session's active (non-terminal) run and its status, or null (plan §27.5: at most one works). */
  readonly activeRun: { readonly runId: string; readonly status: RunStatus } | null;
  /** Runs queued behind the active one (`enqueue`), the next first; all of them `queued`. */
  readonly queuedRunIds: readonly string[];
}

/**
 * The state a session's read-model row stands for, with its active run's row (the projections
 * fold the same events). A run that has ended is no longer active.
 */
export function sessionStateOf(
  session: {
    readonly status: 'active' | 'deleted';
    readonly title: string | null;
    readonly queuedRunIds?: readonly string[];
  },
  activeRun: { readonly id: string; readonly status: RunStatus } | null,
): SessionState {
  return {
    status: session.status,
    title: session.title,
    activeRun: activeRun && !isTerminal(activeRun.status) ? { runId: activeRun.id, status: activeRun.status } : null,
    queuedRunIds: session.queuedRunIds ?? [],
  };
}

export interface CreateSession {
  readonly kind: 'CreateSession';
  readonly actor: Actor;
  readonly agentId: string;
  readonly agentVersion: number;
  readonly principalId: string;
  readonly title: string | null;
  readonly metadata: Record<string, unknown>;
  /**
   * The session's first message (`POST /v1/sessions` with `message`, ADR 0053): the message and its
   * run, queued, are decided with the session and appended with it.
   */
  readonly message?: Omit<SubmitMessage, 'kind' | 'strategy' | 'interrupting'> | null;
}

export interface DeleteSession {
  readonly kind: 'DeleteSession';
  readonly sessionId: string;
  readonly actor: Actor;
  readonly reason: string | null;
}

/**
 * A user message that starts a new turn: the message and its run, queued (run == turn, plan §27.1).
 * While another run of the session is active, `strategy` says what happens (issue 33): `reject`
 * refuses (409 naming the active run), `enqueue` queues the run behind the session's last one.
 */
export interface SubmitMessage {
  readonly kind: 'SubmitMessage';
  readonly sessionId: string;
  readonly messageId: string;
  readonly content: ContentPart[];
  /** The run the message starts; its `userMessageId` is this message. */
  readonly run: Omit<QueueRun, 'kind' | 'userMessageId' | 'queuedBehind' | 'multitaskStrategy'>;
  /** What to do while another run is active; `reject` when absent. */
  readonly strategy?: MultitaskStrategy;
  /**
   * For `interrupt`: the active run as stopping it needs it (its pending approvals and open
   * invocations, read by the caller); absent, the session's view of it (no approvals, no calls).
   */
  readonly interrupting?: InterruptState;
}

/** The user renames the session (`PATCH /v1/sessions/{id}`). */
export interface RenameSession {
  readonly kind: 'RenameSession';
  readonly sessionId: string;
  readonly actor: Actor;
  readonly title: string;
}

/**
 * A new session forked from another at a point of its log (issue 33): its history is the parent's
 * up to `parent.sequence`, by reference. With `message`, the fork replaces the user message at
 * `parent.atSequence` ("edit and resend"): the message and its run are the fork's first turn.
 */
export interface ForkSession {
  readonly kind: 'ForkSession';
  readonly actor: Actor;
  readonly agentId: string;
  readonly agentVersion: number;
  readonly principalId: string;
  readonly title: string | null;
  readonly metadata: Record<string, unknown>;
  readonly parent: ForkPoint;
  readonly message: Omit<SubmitMessage, 'kind' | 'strategy' | 'interrupting'> | null;
}

/** Where a fork leaves its parent, as the caller's handler read it from the parent's log. */
export interface ForkPoint {
  readonly sessionId: string;
  /** The parent's last sequence (the end of its stream, forks' prefixes included). */
  readonly lastSequence: number;
  /** The sequence the caller asked for. */
  readonly atSequence: number;
  /** The type of the event at `atSequence` and, for a user message, its id. */
  readonly eventType: string;
  readonly messageId: string | null;
}

export type SessionCommand = CreateSession | DeleteSession | SubmitMessage | RenameSession | ForkSession;

function notFound(sessionId: string): NotFoundError {
  return new NotFoundError(`session ${sessionId} not found`, { sessionId });
}

function decide(command: SessionCommand, state: SessionState): Decision {
  switch (command.kind) {
    case 'CreateSession':
      return create(command, state);
    case 'DeleteSession': {
      if (state.status === 'absent') return refuse(notFound(command.sessionId));
      // A repeated delete by its owner succeeds again, writing nothing.
      if (state.status === 'deleted') return accept();
      const active = state.activeRun;
      if (active) {
        return refuse(
          new InvalidStateTransition(
            `session ${command.sessionId} has a ${active.status} run; cancel it and wait for it to end before deleting`,
            { sessionId: command.sessionId, runId: active.runId, runStatus: active.status },
          ),
        );
      }
      return accept(event('session.deleted', { reason: command.reason }, command.actor));
    }
    case 'SubmitMessage':
      return submit(command, state);
    case 'RenameSession':
      return rename(command, state);
    case 'ForkSession':
      return fork(command, state);
  }
}

/** The session's first event, and with a first message its first turn (as a submit would decide it). */
function create(command: CreateSession, state: SessionState): Decision {
  if (state.status !== 'absent') return refuse(new InvalidStateTransition('the session exists already', {}));
  const { actor, agentId, agentVersion, principalId, title, metadata, message } = command;
  const created = event('session.created', { agentId, agentVersion, principalId, title, metadata }, actor);
  if (!message) return accept(created);
  return combine(
    accept(created),
    submit({ ...message, kind: 'SubmitMessage', strategy: 'reject' }, evolve(state, created)),
  );
}

/**
 * The fork's first event, and with a replacement message its first turn. The prefix ends at the
 * asked sequence, or just before the user message a replacement resends (which must be one).
 */
function fork(command: ForkSession, state: SessionState): Decision {
  if (state.status !== 'absent') return refuse(new InvalidStateTransition('the session exists already', {}));
  const { parent, message } = command;
  if (parent.atSequence < 1 || parent.atSequence > parent.lastSequence) {
    return refuse(
      new NotFoundError(
        `session ${parent.sessionId} has no sequence ${parent.atSequence} (its log ends at ${parent.lastSequence})`,
        { field: 'at_sequence', sessionId: parent.sessionId, lastSequence: parent.lastSequence },
      ),
    );
  }
  if (message !== null && parent.eventType !== 'user.message.created') {
    return refuse(
      new ValidationError(
        `at_sequence ${parent.atSequence} is a ${parent.eventType} event; a replacement message needs the sequence of a user message`,
        { field: 'at_sequence', eventType: parent.eventType },
      ),
    );
  }
  const forked = event(
    'session.forked',
    {
      agentId: command.agentId,
      agentVersion: command.agentVersion,
      principalId: command.principalId,
      title: command.title,
      metadata: command.metadata,
      parentSessionId: parent.sessionId,
      parentSequence: message === null ? parent.atSequence : parent.atSequence - 1,
      atSequence: parent.atSequence,
      replacedMessageId: message === null ? null : parent.messageId,
    },
    command.actor,
  );
  if (message === null) return accept(forked);
  return combine(
    accept(forked),
    submit({ ...message, kind: 'SubmitMessage', strategy: 'reject' }, evolve(state, forked)),
  );
}

function submit(command: SubmitMessage, state: SessionState): Decision {
  if (state.status !== 'active') return refuse(notFound(command.sessionId));
  const { run, messageId, content } = command;
  const strategy = command.strategy ?? DEFAULT_MULTITASK_STRATEGY;
  const active = state.activeRun;
  if (active && strategy === 'reject') {
    return refuse(
      new ConflictError(`session ${command.sessionId} already has an active run`, {
        sessionId: command.sessionId,
        activeRunId: active.runId,
        activeRunStatus: active.status,
      }),
    );
  }
  // `enqueue`: the new run waits behind the session's last run (FIFO); `interrupt`: right behind the
  // active run, which is asked to stop (or ends now, when no worker holds it).
  const interrupting = active !== null && isInterruptMode(strategy);
  const queuedBehind = !active
    ? null
    : interrupting
      ? active.runId
      : queueTail({ active: active.runId, queued: state.queuedRunIds });
  const header = { runId: run.runId, ...run.actor };
  // A session without a title takes one from its first message (the user may rename it later).
  const title = state.title === null || state.title.trim() === '' ? titleFromMessage(content) : null;
  return combine(
    title === null ? accept() : accept(event('session.title.changed', { title, source: 'first_message' }, run.actor)),
    accept(event('user.message.created', { messageId, content }, header)),
    runDecider.decide(
      { ...run, kind: 'QueueRun', userMessageId: messageId, queuedBehind, multitaskStrategy: strategy },
      runDecider.initialState(),
    ),
    interrupting && isInterruptMode(strategy) ? interruptActive(command, active, strategy) : accept(),
  );
}

/** The active run stopped for the new message's run (run-interrupt.ts). */
function interruptActive(
  command: SubmitMessage,
  active: { readonly runId: string; readonly status: RunStatus },
  mode: InterruptMode,
): Decision {
  const state: InterruptState = command.interrupting ?? {
    run: {
      runId: active.runId,
      status: active.status,
      cancelRequested: false,
      everStarted: active.status !== 'queued',
    },
    pendingApprovals: [],
    openInvocations: [],
  };
  const cmd = { runId: active.runId, byRunId: command.run.runId, mode, actor: command.run.actor, reason: null };
  return decideInterrupt(cmd, state);
}

function rename(command: RenameSession, state: SessionState): Decision {
  if (state.status !== 'active') return refuse(notFound(command.sessionId));
  const title = command.title.trim();
  if (title === '') return refuse(new ValidationError('the title must not be empty', { field: 'title' }));
  if (title.length > SESSION_TITLE_MAX_CHARS) {
    return refuse(
      new ValidationError(`the title is ${title.length} characters; the limit is ${SESSION_TITLE_MAX_CHARS}`, {
        field: 'title',
      }),
    );
  }
  // Renaming to the title it has already writes nothing.
  if (title === state.title) return accept();
  return accept(event('session.title.changed', { title, source: 'user' }, command.actor));
}

function evolve(state: SessionState, e: DecidedEvent): SessionState {
  switch (e.type) {
    case 'session.created':
    case 'session.forked':
      return { status: 'active', title: e.data.title, activeRun: null, queuedRunIds: [] };
    case 'session.title.changed':
      return { ...state, title: e.data.title };
    case 'session.deleted':
      return { ...state, status: 'deleted' };
    case 'run.queued':
      return withQueue(state, queueAfterQueued(queueOf(state), e.runId ?? '', e.data.queuedBehind ?? null));
    default: {
      if (!e.runId) return state;
      if (RUN_ENDING_EVENTS.has(e.type)) return withQueue(state, queueAfterEnded(queueOf(state), e.runId));
      const active = state.activeRun;
      if (!active || e.runId !== active.runId) return state;
      const status = runStatusAfter(e.type, active.status);
      return status === active.status ? state : { ...state, activeRun: { ...active, status } };
    }
  }
}

function queueOf(state: SessionState) {
  return { active: state.activeRun?.runId ?? null, queued: state.queuedRunIds };
}

/** The state with `q` as its queue: a run that becomes active is `queued` until a worker claims it. */
function withQueue(state: SessionState, q: { active: string | null; queued: readonly string[] }): SessionState {
  const activeRun =
    q.active === null
      ? null
      : q.active === state.activeRun?.runId
        ? state.activeRun
        : { runId: q.active, status: 'queued' as const };
  return { ...state, activeRun, queuedRunIds: q.queued };
}

/**
 * The session aggregate (plan §27): `session.created`, `session.title.changed`, `session.deleted`
 * and the user messages that start turns. Deleting is refused while a run is not terminal.
 */
export const sessionDecider: Decider<SessionCommand, SessionState> = {
  initialState: () => ({ status: 'absent', title: null, activeRun: null, queuedRunIds: [] }),
  evolve,
  decide,
};
