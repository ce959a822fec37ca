import type { ToolCallItem } from '../../../domain/conversation/items';
import type { Tool, ToolExecutionContext } from '../../../ports/tool';
import type { ToolCallStatus } from '../../../ports/metrics';
import type { InvocationRecord } from '../../../ports/tool-records';
import type { NewEvent } from '../../../domain/events/payloads';
import type { ToolInvocationState } from '../../../domain/deciders/tool-invocation';
import { decideTool, type ToolCommand } from '../events';
import type { AppendForRun, PipelineServices, ToolCallContext } from './types';

/** One call's pass through the pipeline: who it is, and how its events may be written. */
export interface CallScope {
  readonly p: PipelineServices;
  readonly call: ToolCallItem;
  readonly ctx: ToolCallContext;
  readonly key: string;
  readonly argsHash: string;
  readonly invocationId: string;
  /** The invocation recorded for this call before this pass, if any. */
  readonly existing: InvocationRecord | null;
  readonly tool: Tool | undefined;
  /** Metrics label unknown tools `unknown`: a model-invented name must not become a label value. */
  readonly metricName: string;
  /** The policy version of this pass. */
  readonly policyVersion: string;
  /** Queued for the next durable write when the caller allows it; written now otherwise. */
  readonly later: AppendForRun;
  /** Written now. */
  readonly now: AppendForRun;
  /** When the call passed its resolve and scope checks (its latency is measured from there). */
  startedMs: number;
  /** The invocation aggregate's state as this pass has decided it so far. */
  inv: ToolInvocationState;
  /** A bridged call (plan §8.5): the `sandbox.run_program` invocation whose program made it. */
  readonly bridgedFrom?: string;
  /** The arguments a human approved instead of the model's (approve with edits); null when none. */
  editedArguments?: Record<string, unknown> | null;
  /** Runs a call this invocation's program makes through the tool bridge (set for a model's call). */
  callTool?: ToolExecutionContext['callTool'];
}

/** Asks the tool invocation decider for this call's events and moves the call's state on. */
export function decided(s: CallScope, command: ToolCommand): NewEvent[] {
  const d = decideTool(s.inv, s.ctx.runId, s.invocationId, command);
  s.inv = d.state;
  return d.events;
}

export type Done = { readonly kind: 'done' };

/** A call's final outcome was recorded: count it (tool_calls_total, tool_failures_total). */
export function counted(s: CallScope, tool: string, status: ToolCallStatus): Done {
  s.p.telemetry.metrics.toolCall(tool, status);
  return { kind: 'done' };
}

/** `tool.call.denied` (queued when the caller allows it). */
export async function deny(s: CallScope, reasonCode: string, explanation: string, policyVersion = s.policyVersion) {
  await s.later(decided(s, { kind: 'DenyToolCall', reasonCode, explanation, policyVersion }));
  return counted(s, s.metricName, 'denied');
}

/** `tool.call.failed` through `write` (before the tool ran: queued; after it: as its result is written). */
export async function fail(s: CallScope, errorCode: string, message: string, retryable: boolean, write = s.later) {
  const latencyMs = s.p.clock.nowMs() - s.startedMs;
  await write(decided(s, { kind: 'FailToolCall', errorCode, message, retryable, latencyMs }));
  return counted(s, s.metricName, 'failed');
}
