import type { ToolCallItem } from '../conversation/items';
import { beforeModelCall, usageBudgets } from './budgets';
import type { CheckpointState } from './checkpoint';
import { CANCEL_REQUESTED, failedWith, type RunOutcome } from './outcome';
import type { RunRecord } from './run';

/** The tool calls of a model response that still have to run (the `model_completed` checkpoint's). */
export interface PendingCalls {
  readonly calls: readonly ToolCallItem[];
  readonly malformed: CheckpointState['malformedToolCalls'];
}

/**
 * What the last step did, as its executor reports it. `S` is the runtime's description of a
 * suspension (the events that park the run); the domain only passes it along.
 */
export type Observation<S = unknown> =
  /** The lease began: at a step's pending tool calls, or before the next model call. */
  | { readonly kind: 'resumed'; readonly pending: PendingCalls | null }
  /** Every tool call of the step has its outcome. */
  | { readonly kind: 'tools_completed' }
  /** A tool call must wait for a human (approval, review, user input). */
  | { readonly kind: 'needs_human'; readonly suspension: S }
  /** The model answered: with tool calls to run (`pending`), or with `text` only. */
  | { readonly kind: 'model_responded'; readonly text: string; readonly pending: PendingCalls | null }
  /** The step ended the run (a refusal, an exhausted budget, a cancel seen at a write). */
  | { readonly kind: 'ended'; readonly outcome: RunOutcome }
  /** The worker was told to stop (shutdown, fenced, cancel via heartbeat, crash simulation). */
  | { readonly kind: 'stopped' };

/** Everything `nextStep` decides on: the last observation and the run row as the last write left it. */
export interface RunState<S = unknown> {
  /** The step the last observation belongs to (0 before the first model call). */
  readonly step: number;
  readonly last: Observation<S>;
  /** The worker's stop signal has fired. */
  readonly stopping: boolean;
  readonly nowMs: number;
  readonly run: Pick<RunRecord, 'cancelRequestedAt' | 'deadlineAt' | 'limits' | 'usage'>;
}

/** What the run loop does next (plan §12); `finish`, `suspend` and `stop` end the loop. */
export type Step<S = unknown> =
  | { readonly kind: 'call_model'; readonly step: number }
  | { readonly kind: 'run_tools'; readonly step: number; readonly pending: PendingCalls }
  | { readonly kind: 'suspend'; readonly step: number; readonly suspension: S }
  | { readonly kind: 'finish'; readonly outcome: RunOutcome }
  | { readonly kind: 'stop' };

/**
 * The run loop's decision table, pure: resumed or tools done → the next model call unless a stop,
 * a cancel request, the deadline or the step budget says otherwise; a model response → its budgets,
 * then its tool calls, or the answer that completes the run (an empty one fails it).
 */
export function nextStep<S>(state: RunState<S>): Step<S> {
  const { last, step } = state;
  switch (last.kind) {
    case 'ended':
      return { kind: 'finish', outcome: last.outcome };
    case 'stopped':
      return { kind: 'stop' };
    case 'needs_human':
      return { kind: 'suspend', step, suspension: last.suspension };
    case 'resumed':
      return last.pending ? { kind: 'run_tools', step, pending: last.pending } : modelCallOrGate(state);
    case 'tools_completed':
      return modelCallOrGate(state);
    case 'model_responded':
      return afterResponse(state, last);
  }
}

function modelCallOrGate(state: RunState<unknown>): Step<never> {
  if (state.stopping) return { kind: 'stop' };
  if (state.run.cancelRequestedAt) return { kind: 'finish', outcome: CANCEL_REQUESTED };
  const next = state.step + 1;
  const refused = beforeModelCall(state.run, next, state.nowMs);
  return refused ? { kind: 'finish', outcome: refused } : { kind: 'call_model', step: next };
}

function afterResponse(
  state: RunState<unknown>,
  response: Extract<Observation, { kind: 'model_responded' }>,
): Step<never> {
  const budget = usageBudgets(state.run.limits, state.run.usage);
  if (budget) return { kind: 'finish', outcome: budget };
  if (state.stopping) return { kind: 'stop' };
  if (response.pending) return { kind: 'run_tools', step: state.step, pending: response.pending };
  if (response.text.trim() === '') {
    const empty = failedWith(
      'empty_model_turn',
      'the model returned neither text nor tool calls',
      'model_protocol_error',
    );
    return { kind: 'finish', outcome: empty };
  }
  return { kind: 'finish', outcome: { kind: 'completed', text: response.text } };
}

/**
 * Where a lease resumes the run (plan §8.4): at the pending tool calls of a `model_completed`
 * checkpoint of the current step; after a `tools_completed` one (or at a fresh run's start) before
 * the next model call; otherwise the current step's model call has no checkpoint and is made again
 * under the same step number.
 */
export function resumePoint(
  stepCount: number,
  checkpoint: CheckpointState | null,
): { readonly step: number; readonly pending: PendingCalls | null } {
  const atStep = checkpoint !== null && checkpoint.step === stepCount;
  if (atStep && checkpoint.phase === 'model_completed')
    return {
      step: stepCount,
      pending: { calls: checkpoint.pendingToolCalls, malformed: checkpoint.malformedToolCalls },
    };
  if (stepCount > 0 && !(atStep && checkpoint.phase === 'tools_completed'))
    return { step: stepCount - 1, pending: null };
  return { step: stepCount, pending: null };
}
