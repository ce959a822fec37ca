import { createHash } from 'node:crypto';
import type { AgentSpec } from '../domain/agent';
import type { ToolCallItem } from '../domain/conversation/items';
import type { NewEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import type { ToolResult } from '../domain/tools/tool-spec';
import type { Clock, IdFactory } from '../ports/clock';
import type { RunRepository } from '../ports/run-store';
import { evaluateDefaultPolicy } from '../policy/policy-engine';
import { argumentsHash, type ToolRegistry } from '../tools/registry';

/** How many identical calls with identical results a run may make before it is stopped as a loop. */
export const LOOP_THRESHOLD = 3;

export interface ToolCallContext {
  readonly runId: string;
  readonly sessionId: string;
  readonly step: number;
  readonly agent: AgentSpec;
  readonly principal: Principal;
  readonly signal: AbortSignal;
}

/** Writes events for one run (fenced by the caller's lease). */
export type AppendForRun = (events: NewEvent[]) => Promise<void>;

export type ToolCallOutcome = { readonly kind: 'done' } | { readonly kind: 'loop_detected'; readonly toolName: string };

/**
 * The tool pipeline of plan §8.3, in order: resolve → enabled for agent → principal scopes →
 * validate → normalize → policy → (approval) → execute with timeout → validate result →
 * truncate → persist. Invalid arguments never reach the implementation. An idempotency key that
 * already succeeded returns the stored result instead of executing again.
 */
export class ToolPipeline {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly runs: RunRepository,
    private readonly clock: Clock,
    private readonly ids: IdFactory,
  ) {}

  static idempotencyKey(runId: string, step: number, callId: string, toolName: string, argsHash: string): string {
    return createHash('sha256').update([runId, step, callId, toolName, argsHash].join('\u0000')).digest('hex');
  }

  async process(call: ToolCallItem, ctx: ToolCallContext, append: AppendForRun): Promise<ToolCallOutcome> {
    const argsHash = safeHash(call.arguments, `${ctx.runId}:${ctx.step}:${call.callId}`);
    const key = ToolPipeline.idempotencyKey(ctx.runId, ctx.step, call.callId, call.name, argsHash);
    const existing = await this.runs.invocationByKey(key);
    if (existing && ['succeeded', 'failed', 'denied'].includes(existing.status)) return { kind: 'done' }; // already answered
    const invocationId = existing?.id ?? this.ids.uuid();
    const ev = <T extends NewEvent>(e: T): T => ({ ...e, runId: ctx.runId, actorType: 'worker' });
    const tool = this.registry.get(call.name);

    if (!existing) {
      if (tool) {
        const prior = await this.runs.priorInvocations(ctx.runId, call.name, argsHash);
        const answered = prior.filter((p) => p.status === 'succeeded');
        const sameEvidence = answered.length >= LOOP_THRESHOLD && answered.every((p) => JSON.stringify(p.result) === JSON.stringify(answered[0].result));
        if (sameEvidence) return { kind: 'loop_detected', toolName: call.name };
      }
      await append([
        ev({
          type: 'tool.call.proposed',
          data: { invocationId, step: ctx.step, callId: call.callId, toolName: call.name, toolVersion: tool?.spec.version ?? null, arguments: call.arguments, argumentsHash: argsHash, idempotencyKey: key },
        }),
      ]);
    }
    const deny = (reasonCode: string, explanation: string) =>
      append([ev({ type: 'tool.call.denied', data: { invocationId, reasonCode, explanation, policyVersion: 'default-matrix@1' } })]).then(() => ({ kind: 'done' }) as const);

    if (!tool) return deny('unknown_tool', `no tool named "${call.name}" is registered`);
    if (!ctx.agent.enabledTools.includes(call.name)) return deny('tool_not_enabled', `tool "${call.name}" is not enabled for agent ${ctx.agent.id}`);
    const missing = tool.spec.requiredScopes.filter((s) => !ctx.principal.scopes.has(s));
    if (missing.length > 0) return deny('missing_scope', `principal lacks scope(s): ${missing.join(', ')}`);

    const started = this.clock.nowMs();
    const fail = (errorCode: string, message: string, retryable: boolean) =>
      append([ev({ type: 'tool.call.failed', data: { invocationId, errorCode, message, retryable, latencyMs: this.clock.nowMs() - started } })]).then(() => ({ kind: 'done' }) as const);

    const checked = this.registry.validateArguments(call.name, call.arguments);
    if (!checked.ok) {
      return fail('tool_validation_error', `invalid arguments for ${call.name}: ${checked.errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`, false);
    }
    const decision = evaluateDefaultPolicy(tool.spec);
    if (decision.decision === 'deny') return deny(decision.reasonCode, decision.explanation);
    if (decision.decision === 'require_approval') {
      // Human approval arrives with the approvals milestone; until then such tools are refused, never run.
      return deny('approval_unavailable', `${decision.explanation}; approvals are not enabled in this deployment`);
    }
    if (!existing || existing.status === 'proposed') {
      await append([ev({ type: 'tool.call.authorized', data: { invocationId, decision: decision.decision, reasonCode: decision.reasonCode, policyVersion: decision.policyVersion } })]);
    }
    // Builtin tools are read-only or idempotent, so a crashed RUNNING invocation is safely retried (§8.4).
    await append([ev({ type: 'tool.call.started', data: { invocationId } })]);
    const result = await this.execute(tool.spec.timeoutSeconds, ctx, invocationId, key, checked.value, call.name);
    if (!result.ok) return fail(result.errorCode, result.message, result.retryable);
    const validated = this.registry.validateResult(call.name, result.output);
    if (!validated.ok) return fail('tool_result_validation_error', `${call.name} returned an invalid result`, false);
    const { output, truncated } = truncate(result.output, tool.spec.maximumOutputBytes);
    await append([ev({ type: 'tool.call.completed', data: { invocationId, result: output, truncated, latencyMs: this.clock.nowMs() - started } })]);
    return { kind: 'done' };
  }

  private async execute(
    timeoutSeconds: number,
    ctx: ToolCallContext,
    invocationId: string,
    key: string,
    args: Record<string, unknown>,
    name: string,
  ): Promise<ToolResult> {
    const tool = this.registry.get(name)!;
    const controller = new AbortController();
    const onAbort = () => controller.abort(ctx.signal.reason);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => controller.abort(new Error('timeout')), timeoutSeconds * 1000);
    try {
      const timeout = new Promise<ToolResult>((resolve) =>
        controller.signal.addEventListener('abort', () => resolve({ ok: false, errorCode: 'tool_timeout', message: `${name} did not finish within ${timeoutSeconds}s`, retryable: true }), { once: true }),
      );
      return await Promise.race([
        tool.execute(args, { runId: ctx.runId, sessionId: ctx.sessionId, tenantId: ctx.principal.tenantId, principalId: ctx.principal.principalId, invocationId, idempotencyKey: key, clock: this.clock, signal: controller.signal }),
        timeout,
      ]);
    } catch (e) {
      return { ok: false, errorCode: 'tool_execution_error', message: e instanceof Error ? e.message : String(e), retryable: false };
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
    }
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
function truncate(output: Record<string, unknown>, maxBytes: number): { output: Record<string, unknown>; truncated: boolean } {
  const text = JSON.stringify(output);
  if (Buffer.byteLength(text) <= maxBytes) return { output, truncated: false };
  return { output: { truncated: true, excerpt: text.slice(0, Math.max(0, maxBytes - 64)) }, truncated: true };
}
