import { createHash } from 'node:crypto';
import type { ToolCallItem } from '../domain/conversation/items';
import type { NewEvent } from '../domain/events/payloads';
import {
  toolInvocationDecider,
  toolInvocationStateOf,
  type ToolInvocationStatus,
} from '../domain/deciders/tool-invocation';
import type { InvocationRecord } from '../ports/tool-records';
import { noopMetrics } from '../ports/metrics';
import { argumentsHash } from '../tools/registry';
import { approve } from './steps/tool/approval';
import { authorize } from './steps/tool/authorize';
import { execute } from './steps/tool/execute';
import { propose } from './steps/tool/propose';
import { recordResult } from './steps/tool/record';
import { start } from './steps/tool/start';
import { askUser } from './steps/tool/suspensions';
import { delegate } from './steps/tool/delegate';
import {
  APPROVAL_REQUIRED_VIA_BRIDGE,
  PROGRAM_HELD,
  bridgeOutcomeOf,
  recordedOutcome,
  suspendForBridgedCall,
} from './steps/tool/bridged';
import { BridgeHold } from './steps/tool/bridge-hold';
import { deny, type CallScope } from './steps/tool/call-scope';
import { editedArgumentsOf } from './steps/tool/edited';
import type { BridgeCallOutcome } from '../ports/tool-bridge';
import type {
  AppendForRun,
  PipelineServices,
  ProcessOptions,
  ToolCallContext,
  ToolCallOutcome,
  ToolPipelineDeps,
} from './steps/tool/types';
import { RunTelemetry } from './tracing';

export { LOOP_THRESHOLD } from '../domain/run/loop-detection';
export type {
  AppendForRun,
  ProcessOptions,
  ToolCallContext,
  ToolCallOutcome,
  ToolPipelineDeps,
} from './steps/tool/types';

const TERMINAL = new Set(['succeeded', 'failed', 'denied']);

/**
 * The tool pipeline of plan §8.3, in order: propose (with loop detection) → authorize (resolve,
 * enabled for agent, principal scopes, validate, normalize, policy) → approval or suspension →
 * start → execute with timeout → record (validate result, trust, truncate, persist); one small
 * module per stage in `steps/tool/`. Invalid arguments never reach the implementation; an
 * idempotency key that already succeeded returns the stored result; a non-idempotent tool found
 * past its effect watermark after a crash becomes UNCERTAIN and waits for a human review instead of
 * running again (§8.4). Policy is evaluated on every pass, so an approved call is revalidated
 * before it executes.
 */
export class ToolPipeline {
  private readonly services: PipelineServices;
  constructor(deps: ToolPipelineDeps) {
    const telemetry =
      deps.telemetry ?? new RunTelemetry(noopMetrics, { get: async () => null }, () => deps.clock.nowMs());
    this.services = { ...deps, telemetry };
  }

  static idempotencyKey(runId: string, step: number, callId: string, toolName: string, argsHash: string): string {
    return createHash('sha256').update([runId, step, callId, toolName, argsHash].join('\u0000')).digest('hex');
  }

  private keyOf(call: ToolCallItem, ctx: ToolCallContext): { key: string; argsHash: string } {
    const argsHash = safeHash(call.arguments, `${ctx.runId}:${ctx.step}:${call.callId}`);
    return { key: ToolPipeline.idempotencyKey(ctx.runId, ctx.step, call.callId, call.name, argsHash), argsHash };
  }

  /** Whether this call was already proposed (a resumed batch does not count against the tool budget again). */
  async known(call: ToolCallItem, ctx: ToolCallContext): Promise<boolean> {
    return (await this.lookup(call, ctx)) !== null;
  }

  /** The invocation recorded for this call, if it was already proposed. */
  lookup(call: ToolCallItem, ctx: ToolCallContext): Promise<InvocationRecord | null> {
    return this.services.records.invocationByKey(this.keyOf(call, ctx).key);
  }

  /**
   * The call's own invocation (if it was already proposed) and every invocation of the run with
   * the same tool and arguments hash, in one read; pass both to `process` as `existing` and
   * `sameCall`.
   */
  async lookupCall(
    call: ToolCallItem,
    ctx: ToolCallContext,
  ): Promise<{ existing: InvocationRecord | null; sameCall: readonly InvocationRecord[] }> {
    const { key, argsHash } = this.keyOf(call, ctx);
    const sameCall = await this.services.records.invocationsOfCall(ctx.runId, call.name, argsHash);
    return { existing: sameCall.find((r) => r.idempotencyKey === key) ?? null, sameCall };
  }

  async process(
    call: ToolCallItem,
    ctx: ToolCallContext,
    append: AppendForRun,
    options: ProcessOptions = {},
  ): Promise<ToolCallOutcome> {
    const { key, argsHash } = this.keyOf(call, ctx);
    const existing =
      options.existing !== undefined ? options.existing : await this.services.records.invocationByKey(key);
    if (existing && TERMINAL.has(existing.status)) return { kind: 'done' }; // already answered
    // A program this call runs stops when one of its bridged calls must wait for a human.
    const hold = new BridgeHold();
    const held = { ...ctx, signal: AbortSignal.any([ctx.signal, hold.signal]) };
    const s = this.scopeOf(call, held, { key, argsHash, existing }, append, options.defer);
    s.callTool = this.bridgeOf(s, append, hold);
    s.editedArguments = await editedArgumentsOf(s);
    if (!existing) {
      const refused = await propose(s, options.sameCall);
      if (refused) return refused;
    }
    const authorized = await authorize(s);
    if (authorized.kind !== 'authorized') return authorized;
    const approval = await approve(s, authorized);
    if (approval !== 'proceed') return approval;
    if (authorized.ext.control === 'ask_user') return askUser(s, authorized.args, true);
    if (authorized.ext.control === 'delegate') return delegate(s, authorized.args, true);
    const notStarted = await start(s, authorized, options);
    if (notStarted) return notStarted;
    const result = await s.p.telemetry.toolExecute(authorized.tool.spec, s.invocationId, () => execute(s, authorized));
    if (hold.call) return suspendForBridgedCall(s, hold.call);
    return recordResult(s, authorized, result, options.deferResult ?? false);
  }

  /**
   * The parent's bridge (plan §8.5): each call its program makes goes through this pipeline as a
   * call of the parent's step — proposed with `via: bridge` and the parent's invocation, then
   * authorized against the run's agent and scopes, policy, started, executed and recorded — its
   * events written at once (the parent is running; nothing else of the run writes meanwhile). One
   * at a time, in the program's order. A call that must wait for a human's approval holds the
   * program (`BridgeHold`): the program is stopped and the run waits, like for a model's call.
   */
  private bridgeOf(parent: CallScope, append: AppendForRun, hold: BridgeHold): NonNullable<CallScope['callTool']> {
    let queue: Promise<unknown> = Promise.resolve();
    return (b) => {
      const next = queue.then(() => (hold.call ? PROGRAM_HELD : this.processBridged(parent, append, b, hold)));
      queue = next.catch(() => undefined);
      return next;
    };
  }

  private async processBridged(
    parent: CallScope,
    append: AppendForRun,
    b: Parameters<NonNullable<CallScope['callTool']>>[0],
    hold: BridgeHold,
  ): Promise<BridgeCallOutcome> {
    const call: ToolCallItem = {
      kind: 'tool_call',
      callId: `${parent.call.callId}:bridge:${b.sequence}`,
      name: b.toolName,
      arguments: b.arguments,
    };
    const ctx: ToolCallContext = { ...parent.ctx, signal: b.signal };
    const { key, argsHash } = this.keyOf(call, ctx);
    const existing = await this.services.records.invocationByKey(key);
    // The parent ran again after a crash and its program repeated a call that already ended.
    // The program runs again after a crash or a human's decision and repeats a call that ended:
    // it gets the recorded outcome, nothing runs twice.
    if (existing && TERMINAL.has(existing.status)) return recordedOutcome(existing);
    const written: NewEvent[] = [];
    const write: AppendForRun = async (events) => {
      await append(events);
      written.push(...events);
    };
    const s = {
      ...this.scopeOf(call, ctx, { key, argsHash, existing }, write, undefined),
      bridgedFrom: parent.invocationId,
    };
    s.editedArguments = await editedArgumentsOf(s);
    const pass = await this.bridgedPass(s);
    if (pass.kind === 'suspend' && pass.awaiting.kind === 'approval') {
      hold.hold({ invocationId: s.invocationId, approvalId: pass.awaiting.approvalId, suspension: pass });
      return PROGRAM_HELD;
    }
    return bridgeOutcomeOf(s.invocationId, written, pass);
  }

  private async bridgedPass(s: CallScope): Promise<ToolCallOutcome> {
    if (!s.existing) {
      const refused = await propose(s);
      if (refused) return refused;
    }
    const authorized = await authorize(s);
    if (authorized.kind !== 'authorized') return authorized;
    // A question for the user or a delegation is a conversation of the model's own, never a program's.
    if (authorized.ext.control !== undefined)
      return deny(
        s,
        APPROVAL_REQUIRED_VIA_BRIDGE,
        `${s.call.name} needs a human's answer, which a program cannot wait for; the model may call it directly`,
        authorized.decision.policyVersion,
      );
    const approval = await approve(s, authorized);
    if (approval !== 'proceed') return approval;
    const notStarted = await start(s, authorized, {});
    if (notStarted) return notStarted;
    const result = await s.p.telemetry.toolExecute(authorized.tool.spec, s.invocationId, () => execute(s, authorized));
    return recordResult(s, authorized, result, false);
  }

  private scopeOf(
    call: ToolCallItem,
    ctx: ToolCallContext,
    found: { key: string; argsHash: string; existing: InvocationRecord | null },
    append: AppendForRun,
    defer: ((events: NewEvent[]) => void) | undefined,
  ): CallScope {
    const p = this.services;
    const tool = p.registry.get(call.name);
    // Queued for the next durable write when the caller allows it; written now otherwise.
    const later: AppendForRun = defer
      ? (events) => {
          defer(events);
          return Promise.resolve();
        }
      : append;
    return {
      p,
      call,
      ctx,
      ...found,
      invocationId: found.existing?.id ?? p.ids.uuid(),
      tool,
      metricName: tool ? call.name : 'unknown',
      policyVersion: p.policy.version,
      later,
      now: append,
      startedMs: 0,
      // What the invocation's read-model row stands for (the projection folds the same events).
      inv: found.existing
        ? toolInvocationStateOf(found.existing.id, found.existing.status as ToolInvocationStatus)
        : toolInvocationDecider.initialState(),
    };
  }
}

/** Arguments from a model are plain JSON, so hashing cannot fail; if it somehow does, each call is unique. */
function safeHash(args: Record<string, unknown>, fallback: string): string {
  try {
    return argumentsHash(args);
  } catch {
    return createHash('sha256').update(`unhashable:${fallback}`).digest('hex');
  }
}

/** Keeps results under the tool's output ceiling; oversize output is replaced by a marked excerpt. */
export function truncate(
  output: Record<string, unknown>,
  maxBytes: number,
): { output: Record<string, unknown>; truncated: boolean } {
  const text = JSON.stringify(output);
  if (Buffer.byteLength(text) <= maxBytes) return { output, truncated: false };
  const marker = `[truncated: ${Buffer.byteLength(text)} bytes exceed the ${maxBytes}-byte limit]`;
  let excerpt = text.slice(0, Math.max(0, maxBytes - 128));
  while (Buffer.byteLength(excerpt) > Math.max(0, maxBytes - 128)) excerpt = excerpt.slice(0, -16);
  return { output: { truncated: true, marker, excerpt }, truncated: true };
}
