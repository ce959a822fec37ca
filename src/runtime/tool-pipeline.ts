import { createHash } from 'node:crypto';
import { isToolEnabled, type AgentSpec } from '../domain/agent';
import type { ToolCallItem } from '../domain/conversation/items';
import type { NewEvent, ToolResultTrust } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import { isPureComputation, type ToolResult, type ToolSpec } from '../domain/tools/tool-spec';
import type { Clock, IdFactory } from '../ports/clock';
import type { RunRepository } from '../ports/run-store';
import type { InvocationRecord, ToolRecordStore } from '../ports/tool-records';
import type { PolicyDecision, PolicyEngine } from '../policy/policy-engine';
import { argumentsHash, type ToolRegistry } from '../tools/registry';
import { extensionsOf } from '../tools/tool-extensions';
import {
  approvalSummary,
  RUN_CANCELLED,
  RUN_CANCELLED_BEFORE_RETRY,
  RUN_CANCELLED_BEFORE_START,
  UNTRUSTED_NOTICE,
} from '../domain/tools/outcomes';
import { noopMetrics, type ToolCallStatus } from '../ports/metrics';
import { RunTelemetry } from './tracing';
import { fitToolResult, type ToolResultArtifacts } from './tool-result-artifacts';

/** How many identical calls with identical results a run may make before it is stopped as a loop. */
export const LOOP_THRESHOLD = 3;

export interface ToolCallContext {
  readonly runId: string;
  readonly sessionId: string;
  readonly step: number;
  readonly agent: AgentSpec;
  readonly principal: Principal;
  readonly signal: AbortSignal;
  /** The run's deadline, passed to tools (sandbox.run_command bounds its timeout by it). */
  readonly deadlineAt?: string | null;
}

/** Writes events for one run (fenced by the caller's lease). */
export type AppendForRun = (events: NewEvent[]) => Promise<void>;

/**
 * How the run loop lets the pipeline batch its writes (docs/adr/0013-run-loop-round-trips.md).
 * `defer` queues events that need no durable boundary before the next write; they are committed, in
 * order, with it. The pipeline defers only what recovery can re-derive: a call's proposal,
 * authorization, denial or refusal before anything runs, and — with `deferResult`, for a tool that
 * is not non-idempotent — its result. `tool.call.started` and the effect watermark are always
 * durable before the tool executes.
 */
export interface ProcessOptions {
  /** The invocation already looked up by `lookup` (saves reading it again). */
  readonly existing?: InvocationRecord | null;
  /** The call's invocations as `lookupCall` read them with `existing` (saves the loop-detection read). */
  readonly sameCall?: readonly InvocationRecord[];
  readonly defer?: (events: NewEvent[]) => void;
  /** The caller commits before anything else runs (the step's checkpoint follows): defer the result too. */
  readonly deferResult?: boolean;
  /**
   * Writes the start of a tool that is not a pure computation (with whatever is queued before it)
   * unless the run's cancel was requested since the caller last wrote, in which case nothing is
   * written and it resolves `'cancelled'` (`'stopped'`: the worker is stopping); null once written.
   * Without it the start is appended unconditionally.
   */
  readonly start?: (events: NewEvent[]) => Promise<'cancelled' | 'stopped' | null>;
}

/**
 * `suspend`: the run must wait for a human. The run loop appends `before`, a checkpoint and `wait`
 * atomically, in that order (plan §9.3: invocation, approval, checkpoint, WAITING_*, lease release,
 * event), and returns without a terminal write. `stopped`: the worker was told to stop before the
 * tool started (it never runs) or while it ran; nothing was written after `tool.call.started`, so
 * recovery decides (plan §8.4). `cancelled`: the run's cancel was requested before the tool started
 * (`ProcessOptions.start`); it does not run, and the call is refused (`tool.call.denied`,
 * `run_cancelled`; `tool.call.failed` for a call an interrupted lease had started) with the
 * caller's next write.
 */
export type ToolCallOutcome =
  | { readonly kind: 'done' }
  | { readonly kind: 'loop_detected'; readonly toolName: string }
  | { readonly kind: 'suspend'; readonly before: NewEvent[]; readonly wait: NewEvent }
  | { readonly kind: 'stopped' }
  | { readonly kind: 'cancelled' };

export interface ToolPipelineDeps {
  readonly registry: ToolRegistry;
  readonly runs: RunRepository;
  readonly records: ToolRecordStore;
  readonly policy: PolicyEngine;
  readonly clock: Clock;
  readonly ids: IdFactory;
  /** Spans (policy.evaluate, tool.execute) and tool metrics; none when omitted. */
  readonly telemetry?: RunTelemetry;
  /** Oversized results are stored here whole; the model gets an excerpt and the reference (plan §18.4). */
  readonly artifacts?: ToolResultArtifacts;
}

const TERMINAL = new Set(['succeeded', 'failed', 'denied']);

/**
 * The tool pipeline of plan §8.3, in order: resolve → enabled for agent → principal scopes →
 * validate → normalize → policy → approval → execute with timeout → validate result → truncate →
 * persist. Invalid arguments never reach the implementation; an idempotency key that already
 * succeeded returns the stored result; a non-idempotent tool found past its effect watermark after
 * a crash becomes UNCERTAIN and waits for a human review instead of running again (§8.4).
 * Policy is evaluated on every pass, so an approved call is revalidated before it executes.
 */
export class ToolPipeline {
  private readonly telemetry: RunTelemetry;
  constructor(private readonly deps: ToolPipelineDeps) {
    this.telemetry =
      deps.telemetry ?? new RunTelemetry(noopMetrics, { get: async () => null }, () => deps.clock.nowMs());
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
    return this.deps.records.invocationByKey(this.keyOf(call, ctx).key);
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
    const sameCall = await this.deps.records.invocationsOfCall(ctx.runId, call.name, argsHash);
    return { existing: sameCall.find((r) => r.idempotencyKey === key) ?? null, sameCall };
  }

  async process(
    call: ToolCallItem,
    ctx: ToolCallContext,
    append: AppendForRun,
    options: ProcessOptions = {},
  ): Promise<ToolCallOutcome> {
    const { registry, records, clock, ids } = this.deps;
    const { key, argsHash } = this.keyOf(call, ctx);
    const existing = options.existing !== undefined ? options.existing : await records.invocationByKey(key);
    const defer = options.defer;
    // Queued for the next durable write when the caller allows it; written now otherwise.
    const later = (events: NewEvent[]): Promise<void> => {
      if (!defer) return append(events);
      defer(events);
      return Promise.resolve();
    };
    if (existing && TERMINAL.has(existing.status)) return { kind: 'done' }; // already answered
    const invocationId = existing?.id ?? ids.uuid();
    const ev = <T extends NewEvent>(e: T): T => ({ ...e, runId: ctx.runId, actorType: 'worker' });
    const tool = registry.get(call.name);

    if (!existing) {
      if (tool) {
        const prior = options.sameCall ?? (await this.deps.runs.priorInvocations(ctx.runId, call.name, argsHash));
        const answered = prior.filter((p) => p.status === 'succeeded');
        const sameEvidence =
          answered.length >= LOOP_THRESHOLD &&
          answered.every((p) => JSON.stringify(p.result) === JSON.stringify(answered[0].result));
        if (sameEvidence) return { kind: 'loop_detected', toolName: call.name };
      }
      await later([
        ev({
          type: 'tool.call.proposed',
          data: {
            invocationId,
            step: ctx.step,
            callId: call.callId,
            toolName: call.name,
            toolVersion: tool?.spec.version ?? null,
            arguments: call.arguments,
            argumentsHash: argsHash,
            idempotencyKey: key,
          },
        }),
      ]);
    }
    const policyVersion = this.deps.policy.version;
    // Metrics label unknown tools `unknown`: a model-invented name must not become a label value.
    const metricName = tool ? call.name : 'unknown';
    const deny = (reasonCode: string, explanation: string, version = policyVersion) =>
      later([
        ev({ type: 'tool.call.denied', data: { invocationId, reasonCode, explanation, policyVersion: version } }),
      ]).then(() => this.counted(metricName, 'denied'));

    // 1-3: resolve, enabled for the agent, principal scopes. Unknown tools never get further.
    if (!tool) return deny('unknown_tool', `no tool named "${call.name}" is registered`);
    if (!isToolEnabled(ctx.agent, call.name))
      return deny('tool_not_enabled', `tool "${call.name}" is not enabled for agent ${ctx.agent.id}`);
    const missing = tool.spec.requiredScopes.filter((s) => !ctx.principal.scopes.has(s));
    if (missing.length > 0) return deny('missing_scope', `principal lacks scope(s): ${missing.join(', ')}`);

    const started = clock.nowMs();
    // Before the tool runs a failure is re-derived on recovery; after it, only when the result may be deferred.
    let failWith = later;
    const fail = (errorCode: string, message: string, retryable: boolean) =>
      failWith([
        ev({
          type: 'tool.call.failed',
          data: { invocationId, errorCode, message, retryable, latencyMs: clock.nowMs() - started },
        }),
      ]).then(() => this.counted(metricName, 'failed'));

    // 4: validate (strict JSON Schema, unknown arguments refused).
    const checked = registry.validateArguments(call.name, call.arguments);
    if (!checked.ok) {
      return fail(
        'tool_validation_error',
        `invalid arguments for ${call.name}: ${checked.errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`,
        false,
      );
    }
    // 5: normalize (e.g. workspace paths: absolute and `..` refused here, before the tool runs).
    const ext = extensionsOf(tool);
    let args = checked.value;
    if (ext.normalize) {
      const n = ext.normalize(args);
      if (!n.ok) return fail(n.errorCode, n.message, false);
      args = n.value;
    }
    // 6: policy — evaluated on every pass, so an approved call is revalidated before it runs.
    const decision = this.telemetry.policyEvaluate(tool.spec, () =>
      this.deps.policy.evaluate({ spec: tool.spec, arguments: args }),
    );
    if (decision.decision === 'deny') return deny(decision.reasonCode, decision.explanation, decision.policyVersion);
    if (decision.modifiedArguments) args = decision.modifiedArguments;

    const status = existing?.status ?? 'proposed';
    const authorize = (d: { decision: string; reasonCode: string; policyVersion: string }) =>
      later([
        ev({
          type: 'tool.call.authorized',
          data: { invocationId, decision: d.decision, reasonCode: d.reasonCode, policyVersion: d.policyVersion },
        }),
      ]);

    // 7: approval.
    switch (status) {
      case 'proposed':
        if (decision.decision === 'require_approval')
          return this.requestApproval(ctx, invocationId, tool.spec, args, decision);
        await authorize(decision);
        break;
      case 'waiting_for_approval': {
        const approval = await records.approvalForInvocation(invocationId, 'tool_call');
        if (!approval || approval.status === 'pending') {
          if (!approval) return this.requestApproval(ctx, invocationId, tool.spec, args, decision);
          return {
            kind: 'suspend',
            before: [],
            wait: ev({ type: 'run.waiting_for_approval', data: { approvalId: approval.id } }),
          };
        }
        if (approval.status !== 'approved') {
          // The resolver normally records the denial itself; this covers a resolution without it.
          return deny(
            approval.status === 'expired' ? 'approval_expired' : 'approval_denied',
            'the action was not approved, so it was not performed',
          );
        }
        // Revalidated above: a policy that now denies has already refused; otherwise the human's approval stands.
        await authorize({
          decision: 'approved',
          reasonCode: decision.decision === 'require_approval' ? 'human_approved' : decision.reasonCode,
          policyVersion: decision.policyVersion,
        });
        break;
      }
      case 'authorized':
        break; // crashed after authorization, before the tool started: nothing ran yet
      case 'running':
        if (tool.spec.idempotency === 'non_idempotent' && existing?.effectSentAt)
          return this.markUncertain(ctx, invocationId, tool.spec, args, existing);
        if (ext.control === 'ask_user') return this.askUser(ctx, invocationId, args, false);
        break; // read-only, idempotent and conditional (we always pass the key) tools retry (§8.4)
      case 'uncertain': {
        const review = await records.approvalForInvocation(invocationId, 'uncertain_review');
        if (!review || review.status === 'pending') {
          if (!review) return this.markUncertain(ctx, invocationId, tool.spec, args, existing!, false);
          return {
            kind: 'suspend',
            before: [],
            wait: ev({ type: 'run.waiting_for_approval', data: { approvalId: review.id } }),
          };
        }
        if (review.status !== 'approved')
          return fail('uncertain_marked_failed', 'a human reviewer marked the ambiguous execution as failed', false);
        break; // a human chose "retry": execute again, knowingly
      }
      default:
        return fail('internal_error', `invocation ${invocationId} is in unexpected status ${status}`, false);
    }

    if (ext.control === 'ask_user') return this.askUser(ctx, invocationId, args, true);

    // 8: execute with timeout; the watermark precedes a non-idempotent effect. Both are durable
    // (with whatever was queued before them) before the tool runs. A stop that arrived before the
    // start skips the tool altogether: recovery finds the call proposed or authorized (§8.4).
    // A pure computation (no side effect, read-only: the calculator, the clock) is the exception:
    // running it again changes nothing, so its start is queued with its result and nothing is
    // committed before it runs; a crash meanwhile leaves it unproposed, and recovery runs it again.
    // A tool with an effect starts only if no cancel was requested meanwhile (`options.start`).
    if (ctx.signal.aborted) return { kind: 'stopped' };
    const startEvents = [ev({ type: 'tool.call.started', data: { invocationId } })];
    if (isPureComputation(tool.spec)) await later(startEvents);
    else if (!options.start) await append(startEvents);
    else {
      const refused = await options.start(startEvents);
      if (refused === 'stopped') return { kind: 'stopped' };
      if (refused === 'cancelled') {
        // A call an earlier lease started (and a crash interrupted) is not retried, and may have
        // taken effect: it failed. Any other call never ran: it is refused.
        if (status === 'running' || status === 'uncertain') {
          await fail(RUN_CANCELLED, RUN_CANCELLED_BEFORE_RETRY, false);
        } else {
          await later([
            ev({
              type: 'tool.call.denied',
              data: {
                invocationId,
                reasonCode: RUN_CANCELLED,
                explanation: RUN_CANCELLED_BEFORE_START,
                policyVersion: decision.policyVersion,
              },
            }),
          ]);
          this.counted(metricName, 'denied');
        }
        return { kind: 'cancelled' };
      }
    }
    // A stop that arrived while a start was being written: its `abort` has already fired, so only
    // this check keeps the tool from running. Recovery retries a safe call and reviews an unsafe one.
    if (ctx.signal.aborted) return { kind: 'stopped' };
    if (tool.spec.idempotency === 'non_idempotent') {
      await append([ev({ type: 'tool.call.effect_started', data: { invocationId } })]);
      if (ctx.signal.aborted) return { kind: 'stopped' };
    }
    const result = await this.telemetry.toolExecute(tool.spec, invocationId, () =>
      this.execute(tool.spec.timeoutSeconds, ctx, invocationId, key, args, call.name),
    );
    // A non-idempotent tool's outcome is written at once (lost, it would turn into UNCERTAIN), and so
    // is any outcome when the worker is stopping: the loop will not write the step's checkpoint.
    const resultWrite =
      options.deferResult && tool.spec.idempotency !== 'non_idempotent' && !ctx.signal.aborted ? later : append;
    failWith = resultWrite;
    // Told to stop before the tool answered: write nothing more. Recovery retries a safe tool and
    // reviews an unsafe one. A result that did arrive is still recorded (it happened).
    if (ctx.signal.aborted && !result.ok) return { kind: 'stopped' };
    if (!result.ok) return fail(result.errorCode, result.message, result.retryable);
    // 9: validate the result.
    const validated = registry.validateResult(call.name, result.output);
    if (!validated.ok) return fail('tool_result_validation_error', `${call.name} returned an invalid result`, false);
    // Trust label (§11.2); untrusted content is handed to the model as labelled, delimited data.
    const trust = await this.trustOf(ext.trust ?? 'internal_tool', ctx.runId, result.output);
    const labelled =
      trust === 'external_untrusted' ? { trust, notice: UNTRUSTED_NOTICE, data: result.output } : result.output;
    // 10: truncate, keeping an oversized result whole as an artifact; 11: persist.
    const { output, truncated } = await fitToolResult(
      labelled,
      tool.spec,
      {
        tenantId: ctx.principal.tenantId,
        principalId: ctx.principal.principalId,
        runId: ctx.runId,
        sessionId: ctx.sessionId,
        invocationId,
        nowMs: clock.nowMs(),
      },
      this.deps.artifacts,
    );
    await resultWrite([
      ev({
        type: 'tool.call.completed',
        data: { invocationId, result: output, truncated, latencyMs: clock.nowMs() - started, trust },
      }),
      ...(ext.eventsFor?.(result.output, invocationId) ?? []).map((e) => ev(e)),
    ]);
    return this.counted(call.name, 'succeeded');
  }

  /** A call's final outcome was recorded: count it (tool_calls_total, tool_failures_total). */
  private counted(tool: string, status: ToolCallStatus): { readonly kind: 'done' } {
    this.telemetry.metrics.toolCall(tool, status);
    return { kind: 'done' };
  }

  private requestApproval(
    ctx: ToolCallContext,
    invocationId: string,
    spec: ToolSpec,
    args: Record<string, unknown>,
    decision: PolicyDecision,
  ): ToolCallOutcome {
    const approvalId = this.deps.ids.uuid();
    const ev = <T extends NewEvent>(e: T): T => ({ ...e, runId: ctx.runId, actorType: 'worker' });
    this.telemetry.metrics.approvalRequested(spec.name, 'tool_call');
    return {
      kind: 'suspend',
      before: [
        ev({
          type: 'approval.requested',
          data: {
            approvalId,
            actionKind: 'tool_call',
            principalId: ctx.principal.principalId,
            invocationId,
            toolName: spec.name,
            arguments: args,
            actionSummary: approvalSummary(spec.name, args),
            policyReason: decision.reasonCode,
            risk: spec.risk,
            expiresAt: this.deps.policy.approvalExpiry(this.deps.clock.nowMs()),
            policyVersion: decision.policyVersion,
          },
        }),
      ],
      wait: ev({ type: 'run.waiting_for_approval', data: { approvalId } }),
    };
  }

  /** A non-idempotent call past its watermark: UNCERTAIN, and a human decides (retry or fail). Never a blind retry. */
  private markUncertain(
    ctx: ToolCallContext,
    invocationId: string,
    spec: ToolSpec,
    args: Record<string, unknown>,
    inv: InvocationRecord,
    withEvent = true,
  ): ToolCallOutcome {
    const approvalId = this.deps.ids.uuid();
    const ev = <T extends NewEvent>(e: T): T => ({ ...e, runId: ctx.runId, actorType: 'worker' });
    const before: NewEvent[] = withEvent
      ? [
          ev({
            type: 'tool.call.uncertain',
            data: {
              invocationId,
              reason: `the worker stopped after ${spec.name} began its effect at ${inv.effectSentAt}; whether it took effect is unknown`,
            },
          }),
        ]
      : [];
    this.telemetry.metrics.approvalRequested(spec.name, 'uncertain_review');
    before.push(
      ev({
        type: 'approval.requested',
        data: {
          approvalId,
          actionKind: 'uncertain_review',
          principalId: ctx.principal.principalId,
          invocationId,
          toolName: spec.name,
          arguments: args,
          actionSummary: `review an ambiguous execution: ${approvalSummary(spec.name, args)}`,
          policyReason: 'uncertain_non_idempotent_execution',
          risk: spec.risk,
          expiresAt: null,
          policyVersion: this.deps.policy.version,
        },
      }),
    );
    return { kind: 'suspend', before, wait: ev({ type: 'run.waiting_for_approval', data: { approvalId } }) };
  }

  /** conversation.ask_user: the question id is the invocation id, so an answer is idempotent on (run, question). */
  private async askUser(
    ctx: ToolCallContext,
    invocationId: string,
    args: Record<string, unknown>,
    start: boolean,
  ): Promise<ToolCallOutcome> {
    const ev = <T extends NewEvent>(e: T): T => ({ ...e, runId: ctx.runId, actorType: 'worker' });
    return {
      kind: 'suspend',
      before: start ? [ev({ type: 'tool.call.started', data: { invocationId } })] : [],
      wait: ev({ type: 'run.waiting_for_user', data: { questionId: invocationId, question: String(args.question) } }),
    };
  }

  private async trustOf(rule: string, runId: string, output: Record<string, unknown>): Promise<ToolResultTrust> {
    if (rule !== 'workspace_provenance') return rule as ToolResultTrust;
    // Provenance within the run: internal only when this run wrote exactly this content to this path.
    const writes = await this.deps.records.succeededInvocations(runId, 'workspace.write_text');
    const known = writes.some((w) => w.result?.path === output.path && w.result?.sha256 === output.sha256);
    return known ? 'internal_tool' : 'external_untrusted';
  }

  private async execute(
    timeoutSeconds: number,
    ctx: ToolCallContext,
    invocationId: string,
    key: string,
    args: Record<string, unknown>,
    name: string,
  ): Promise<ToolResult> {
    const tool = this.deps.registry.get(name)!;
    const controller = new AbortController();
    const onAbort = () => controller.abort(ctx.signal.reason);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    // An already-aborted signal never fires `abort` again.
    if (ctx.signal.aborted) onAbort();
    const timer = setTimeout(() => controller.abort(new Error('timeout')), timeoutSeconds * 1000);
    try {
      const timeout = new Promise<ToolResult>((resolve) =>
        controller.signal.addEventListener(
          'abort',
          () =>
            resolve({
              ok: false,
              errorCode: 'tool_timeout',
              message: `${name} did not finish within ${timeoutSeconds}s`,
              retryable: true,
            }),
          { once: true },
        ),
      );
      return await Promise.race([
        tool.execute(args, {
          runId: ctx.runId,
          sessionId: ctx.sessionId,
          tenantId: ctx.principal.tenantId,
          principalId: ctx.principal.principalId,
          invocationId,
          idempotencyKey: key,
          clock: this.deps.clock,
          signal: controller.signal,
          deadlineAt: ctx.deadlineAt ?? null,
          agent: ctx.agent,
        }),
        timeout,
      ]);
    } catch (e) {
      return {
        ok: false,
        errorCode: 'tool_execution_error',
        message: e instanceof Error ? e.message : String(e),
        retryable: false,
      };
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
