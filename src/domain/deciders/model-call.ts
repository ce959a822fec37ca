import { InvalidStateTransition } from '../errors';
import type { EventPayloads } from '../events/payloads';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

/**
 * One model call of a run (one attempt of one step), keyed by its `modelCallId`. `building` is the
 * call before its start: its context is being built, and the build's compactions are recorded then.
 */
export interface ModelCallState {
  readonly modelCallId: string | null;
  readonly status: 'building' | 'started' | 'completed' | 'failed';
}

interface ModelCallCommandBase {
  readonly runId: string;
  readonly actor: Actor;
}

/** A compaction checkpoint of the context build before a call (plan §11.4). */
export interface RecordCompaction extends ModelCallCommandBase {
  readonly kind: 'RecordCompaction';
  readonly compaction: EventPayloads['context.compacted'];
}

export interface StartModelCall extends ModelCallCommandBase {
  readonly kind: 'StartModelCall';
  readonly call: EventPayloads['model.request.started'];
}

export interface RecordModelResponse extends ModelCallCommandBase {
  readonly kind: 'RecordModelResponse';
  readonly response: EventPayloads['model.response.completed'];
}

/** The call failed (or was not made: `aborted`); the run loop decides whether to retry. */
export interface RecordModelFailure extends ModelCallCommandBase {
  readonly kind: 'RecordModelFailure';
  readonly failure: EventPayloads['model.request.failed'];
}

export type ModelCallCommand = RecordCompaction | StartModelCall | RecordModelResponse | RecordModelFailure;

function refused(cmd: ModelCallCommand, state: ModelCallState): Decision {
  return refuse(
    new InvalidStateTransition(
      `model call ${state.modelCallId ?? '(not started)'} is ${state.status}: cannot ${cmd.kind}`,
      {
        status: state.status,
      },
    ),
  );
}

function decide(cmd: ModelCallCommand, state: ModelCallState): Decision {
  const header = { runId: cmd.runId, ...cmd.actor };
  switch (cmd.kind) {
    case 'RecordCompaction':
      if (state.status !== 'building') return refused(cmd, state);
      return accept(event('context.compacted', cmd.compaction, header));
    case 'StartModelCall':
      if (state.status !== 'building') return refused(cmd, state);
      return accept(event('model.request.started', cmd.call, header));
    case 'RecordModelResponse':
      if (state.status !== 'started' || state.modelCallId !== cmd.response.modelCallId) return refused(cmd, state);
      return accept(event('model.response.completed', cmd.response, header));
    case 'RecordModelFailure':
      if (state.status !== 'started' || state.modelCallId !== cmd.failure.modelCallId) return refused(cmd, state);
      return accept(event('model.request.failed', cmd.failure, header));
  }
}

function evolve(state: ModelCallState, e: DecidedEvent): ModelCallState {
  switch (e.type) {
    case 'model.request.started':
      return { modelCallId: e.data.modelCallId, status: 'started' };
    case 'model.response.completed':
      return e.data.modelCallId === state.modelCallId ? { ...state, status: 'completed' } : state;
    case 'model.request.failed':
      return e.data.modelCallId === state.modelCallId ? { ...state, status: 'failed' } : state;
    default:
      return state;
  }
}

/**
 * A model call (plan §10): its context build's compactions, its start, and its one outcome. The run
 * owns its calls; each attempt is its own call, so a retry starts from `building` again.
 */
export const modelCallDecider: Decider<ModelCallCommand, ModelCallState> = {
  initialState: () => ({ modelCallId: null, status: 'building' }),
  evolve,
  decide,
};
