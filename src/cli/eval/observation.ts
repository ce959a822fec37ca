import type { StoredEvent } from '../../domain/events/payloads';
import type { RunRecord } from '../../domain/run/run';

/** The read-model fields the assertions look at (a subset, so unit tests can build one by hand). */
export type ObservedRun = Pick<
  RunRecord,
  'id' | 'status' | 'failure' | 'finalText' | 'stepCount' | 'modelCallCount' | 'toolCallCount'
>;

/** What a submission answered: the run and whether it was an idempotent replay. */
export interface ObservedSubmission {
  readonly runId: string;
  readonly replayed: boolean;
}

/** Everything an eval case's assertions are checked against, collected after the run ended. */
export interface Observation {
  readonly run: ObservedRun;
  /** The run's events in sequence order. */
  readonly events: readonly StoredEvent[];
  /** Every event of the case's session (a second run, had one been created, would show up here). */
  readonly sessionEvents: readonly StoredEvent[];
  readonly submissions: readonly ObservedSubmission[];
  /** The texts the harness submitted in the session, in order (preceding turns, then the input). */
  readonly submittedTexts?: readonly string[];
}

/** One tool invocation as the events tell it, joined on `invocationId`. */
export interface ObservedInvocation {
  readonly invocationId: string;
  readonly toolName: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly proposedAt: number;
  /** Sequences of its `tool.call.started` events (more than one means it executed again). */
  readonly startedAt: readonly number[];
  readonly authorizedAt: readonly number[];
}

/** Tool invocations in proposal order; starts of unknown invocations are listed with toolName `?`. */
export function invocationsOf(events: readonly StoredEvent[]): ObservedInvocation[] {
  const byId = new Map<
    string,
    {
      invocationId: string;
      toolName: string;
      arguments: Record<string, unknown>;
      proposedAt: number;
      startedAt: number[];
      authorizedAt: number[];
    }
  >();
  const get = (invocationId: string, sequence: number) => {
    let inv = byId.get(invocationId);
    if (!inv) {
      inv = { invocationId, toolName: '?', arguments: {}, proposedAt: sequence, startedAt: [], authorizedAt: [] };
      byId.set(invocationId, inv);
    }
    return inv;
  };
  for (const e of events) {
    if (e.type === 'tool.call.proposed') {
      const inv = get(e.data.invocationId, e.sequence);
      inv.toolName = e.data.toolName;
      inv.arguments = e.data.arguments;
      inv.proposedAt = e.sequence;
    } else if (e.type === 'tool.call.started') {
      get(e.data.invocationId, e.sequence).startedAt.push(e.sequence);
    } else if (e.type === 'tool.call.authorized') {
      get(e.data.invocationId, e.sequence).authorizedAt.push(e.sequence);
    }
  }
  return [...byId.values()].sort((a, b) => a.proposedAt - b.proposedAt);
}

/** The run's answer: the last `assistant.message.completed`, else the read model's final text. */
export function finalTextOf(obs: Observation): string | null {
  let text: string | null = null;
  for (const e of obs.events) if (e.type === 'assistant.message.completed') text = e.data.text;
  return text ?? obs.run.finalText;
}

/**
 * Every error code the run produced, for `expected_error_code`: the failure reason and code of the
 * run, and the codes of failed model requests, failed tool calls and denied tool calls.
 */
export function errorCodesOf(obs: Observation): string[] {
  const codes: string[] = [];
  if (obs.run.failure) {
    codes.push(obs.run.failure.reason);
    if (obs.run.failure.errorCode) codes.push(obs.run.failure.errorCode);
  }
  for (const e of obs.events) {
    if (e.type === 'run.failed') codes.push(e.data.reason, ...(e.data.errorCode ? [e.data.errorCode] : []));
    else if (e.type === 'model.request.failed') codes.push(e.data.errorCode);
    else if (e.type === 'tool.call.failed') codes.push(e.data.errorCode);
    else if (e.type === 'tool.call.denied') codes.push(e.data.reasonCode);
  }
  return [...new Set(codes)];
}
