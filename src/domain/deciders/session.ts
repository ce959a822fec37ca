import { InvalidStateTransition, NotFoundError } from '../errors';
import type { ContentPart } from '../conversation/items';
import { RUN_ENDING_EVENTS, type RunStatus } from '../run/status';
import { accept, combine, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';
import { runDecider, runStatusAfter, type QueueRun } from './run';

/** The session aggregate as its commands need it: whether it exists, and its one non-terminal run. */
export interface SessionState {
  readonly status: 'absent' | 'active' | 'deleted';
  /** The session's active (non-terminal) run and its status, or null (plan §27.5: at most one). */
  readonly activeRun: { readonly runId: string; readonly status: RunStatus } | null;
}

export interface CreateSession {
  readonly kind: 'CreateSession';
  readonly actor: Actor;
  readonly agentId: string;
  readonly agentVersion: number;
  readonly principalId: string;
  readonly title: string | null;
  readonly metadata: Record<string, unknown>;
}

export interface DeleteSession {
  readonly kind: 'DeleteSession';
  readonly sessionId: string;
  readonly actor: Actor;
  readonly reason: string | null;
}

/** A user message that starts a new turn: the message and its run, queued (run == turn, plan §27.1). */
export interface SubmitMessage {
  readonly kind: 'SubmitMessage';
  readonly sessionId: string;
  readonly messageId: string;
  readonly content: ContentPart[];
  /** The run the message starts; its `userMessageId` is this message. */
  readonly run: Omit<QueueRun, 'kind' | 'userMessageId'>;
}

export type SessionCommand = CreateSession | DeleteSession | SubmitMessage;

function notFound(sessionId: string): NotFoundError {
  return new NotFoundError(`session ${sessionId} not found`, { sessionId });
}

function decide(command: SessionCommand, state: SessionState): Decision {
  switch (command.kind) {
    case 'CreateSession': {
      if (state.status !== 'absent') return refuse(new InvalidStateTransition('the session exists already', {}));
      const { actor, agentId, agentVersion, principalId, title, metadata } = command;
      return accept(event('session.created', { agentId, agentVersion, principalId, title, metadata }, actor));
    }
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
    case 'SubmitMessage': {
      if (state.status !== 'active') return refuse(notFound(command.sessionId));
      const { run, messageId, content } = command;
      const header = { runId: run.runId, ...run.actor };
      return combine(
        accept(event('user.message.created', { messageId, content }, header)),
        runDecider.decide({ ...run, kind: 'QueueRun', userMessageId: messageId }, runDecider.initialState()),
      );
    }
  }
}

function evolve(state: SessionState, e: DecidedEvent): SessionState {
  switch (e.type) {
    case 'session.created':
      return { status: 'active', activeRun: null };
    case 'session.deleted':
      return { ...state, status: 'deleted' };
    case 'run.queued':
      return { ...state, activeRun: { runId: e.runId ?? '', status: 'queued' } };
    default: {
      const active = state.activeRun;
      if (!active || e.runId !== active.runId) return state;
      if (RUN_ENDING_EVENTS.has(e.type)) return { ...state, activeRun: null };
      const status = runStatusAfter(e.type, active.status);
      return status === active.status ? state : { ...state, activeRun: { ...active, status } };
    }
  }
}

/**
 * The session aggregate (plan §27): `session.created`, `session.deleted` and the user messages
 * that start turns. Deleting is refused while a run is not terminal.
 */
export const sessionDecider: Decider<SessionCommand, SessionState> = {
  initialState: () => ({ status: 'absent', activeRun: null }),
  evolve,
  decide,
};
