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

/** A persisted event as an SSE client saw it: the frame's `id:` (the session sequence) and `event:`. */
export interface SseFrameSeen {
  readonly id: number;
  readonly type: string;
}

/** What the harness's SSE client saw of a run it disconnected from mid-run (`disconnect_sse`). */
export interface SseObservation {
  /** Persisted frames the first connection received, the last one being where it was cut. */
  readonly beforeDisconnect: readonly SseFrameSeen[];
  /** The id the client reconnected with (`Last-Event-ID`): the last frame it had. */
  readonly lastEventId: number;
  /** Whether the run's terminal event was already in the log when the client was cut (not mid-run). */
  readonly runEndedBeforeDisconnect: boolean;
  /** Run events committed after `lastEventId` while the client was away (replayed from the database). */
  readonly committedWhileAway: number;
  /** Persisted frames of the reconnected stream, until the server ended it. */
  readonly afterReconnect: readonly SseFrameSeen[];
}

/** One child run of the case's run (delegate.run or a consensus round), as it ended. */
export interface ObservedChild {
  readonly runId: string;
  readonly status: string;
  readonly usage: RunRecord['usage'];
  readonly limits: RunRecord['limits'];
  readonly events: readonly StoredEvent[];
}

/** The case's run as a parent: its usage and limits, and its children in creation order. */
export interface DelegationObservation {
  readonly usage: RunRecord['usage'];
  readonly limits: RunRecord['limits'];
  readonly children: readonly ObservedChild[];
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
  /** The SSE client of a `disconnect_sse` case; absent otherwise. */
  readonly sse?: SseObservation;
  /** The run's children (read only for a case with `expected.children`). */
  readonly delegation?: DelegationObservation;
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

/** One execution of a tool: its `tool.call.started` and the end that followed it (null if none). */
export interface ObservedExecution {
  readonly invocationId: string;
  readonly toolName: string;
  readonly start: { readonly sequence: number; readonly createdAt: string };
  readonly end: { readonly sequence: number; readonly createdAt: string } | null;
}

/** Tool executions in start order: each `tool.call.started` with the invocation's next completion or failure. */
export function executionsOf(events: readonly StoredEvent[]): ObservedExecution[] {
  const names = new Map<string, string>();
  const open = new Map<
    string,
    { invocationId: string; toolName: string; start: ObservedExecution['start']; end: ObservedExecution['end'] }
  >();
  const all: {
    invocationId: string;
    toolName: string;
    start: ObservedExecution['start'];
    end: ObservedExecution['end'];
  }[] = [];
  for (const e of events) {
    const stamp = { sequence: e.sequence, createdAt: e.createdAt };
    if (e.type === 'tool.call.proposed') names.set(e.data.invocationId, e.data.toolName);
    else if (e.type === 'tool.call.started') {
      const x = {
        invocationId: e.data.invocationId,
        toolName: names.get(e.data.invocationId) ?? '?',
        start: stamp,
        end: null,
      };
      open.set(e.data.invocationId, x);
      all.push(x);
    } else if (e.type === 'tool.call.completed' || e.type === 'tool.call.failed') {
      const x = open.get(e.data.invocationId);
      if (x) {
        x.end = stamp;
        open.delete(e.data.invocationId);
      }
    }
  }
  return all;
}
