import { approvalDecider, type RequestApproval } from '../../domain/deciders/approval';
import { eventsOrThrow, evolveAll, WORKER } from '../../domain/deciders/decider';
import { modelCallDecider, type ModelCallCommand, type ModelCallState } from '../../domain/deciders/model-call';
import { runDecider, type RunCommand, type RunState } from '../../domain/deciders/run';
import {
  toolInvocationDecider,
  type ToolInvocationCommand,
  type ToolInvocationState,
} from '../../domain/deciders/tool-invocation';
import type { NewEvent } from '../../domain/events/payloads';

/**
 * The run loop asks the deciders (docs/adr/0024-deciders.md) for every event it appends, as the
 * worker holding the run's lease. A refusal here is a bug of the loop (it asked for a transition its
 * own state does not allow), so it is thrown: the loop crashes and the run fails `internal_error`.
 */

/** A command without the header the worker adds (its run and its actor). */
type Worker<C> = C extends unknown ? Omit<C, 'runId' | 'actor'> : never;

/** The run's events (status changes, checkpoints, the final answer) on the run's state. */
export function decideRun(state: RunState, runId: string, command: Worker<Exclude<RunCommand, { kind: 'ClaimRun' }>>) {
  return [...eventsOrThrow(runDecider.decide({ ...command, runId, actor: WORKER }, state))];
}

/** A model call's events, with the call's state after them (`modelCallDecider.initialState()` before its start). */
export function decideModelCall(
  state: ModelCallState,
  runId: string,
  command: Worker<ModelCallCommand>,
): { events: NewEvent[]; state: ModelCallState } {
  const events = [...eventsOrThrow(modelCallDecider.decide({ ...command, runId, actor: WORKER }, state))];
  return { events, state: evolveAll(modelCallDecider, state, events) };
}

/** A tool invocation command without its header (run, invocation, actor). */
export type ToolCommand = ToolInvocationCommand extends infer C
  ? C extends unknown
    ? Omit<C, 'runId' | 'actor' | 'invocationId'>
    : never
  : never;

/** A tool invocation's events, with its state after them. */
export function decideTool(
  state: ToolInvocationState,
  runId: string,
  invocationId: string,
  command: ToolCommand,
): { events: NewEvent[]; state: ToolInvocationState } {
  const cmd = { ...command, runId, invocationId, actor: WORKER } as ToolInvocationCommand;
  const events = [...eventsOrThrow(toolInvocationDecider.decide(cmd, state))];
  return { events, state: evolveAll(toolInvocationDecider, state, events) };
}

/** A new approval (its id is fresh, so it has no state yet). */
export function decideApprovalRequest(runId: string, command: Worker<RequestApproval>): NewEvent[] {
  const cmd: RequestApproval = { ...command, runId, actor: WORKER };
  return [...eventsOrThrow(approvalDecider.decide(cmd, approvalDecider.initialState()))];
}
