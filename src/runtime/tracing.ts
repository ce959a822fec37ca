import {
  context,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type { NewEvent } from '../domain/events/payloads';
import type { ModelEvent, ModelTurn, ResolvedModel } from '../domain/model/model-events';
import type { RunClaim, RunRecord, TraceRef } from '../domain/run/run';
import type { RunStatus } from '../domain/run/status';
import { totalInputTokens } from '../domain/run/usage';
import type { ToolResult, ToolSpec } from '../domain/tools/tool-spec';
import type { Metrics, RunEndStatus, TokenClass, ToolCallStatus } from '../ports/metrics';
import type { RunRepository } from '../ports/run-store';
import { classifyModelError } from './retry';

const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'interrupted'];

/**
 * Tracing and metrics around the run loop (plan §19), through `@opentelemetry/api` only: with no
 * SDK registered (OTEL_EXPORTER_OTLP_ENDPOINT unset) every span is the API's no-op. The span tree:
 *
 *   agent.run ─ context.build · model.invoke ─ model.stream · policy.evaluate
 *             · tool.execute ─ sandbox.execute · checkpoint.save · artifact.store
 *
 * Attributes are ids, names, versions, counts, statuses and error types — never prompts, message
 * text, tool arguments or results, keys or reasoning. Every helper takes typed values (no free-form
 * attribute bags from callers) so nothing else can slip in.
 */
export const TRACER_NAME = 'agent-core';

/** Resolved per span: a provider registered after this module loaded (tests, benchmarks) is used. */
const tracer = () => trace.getTracer(TRACER_NAME);

/** The ids of a span, or null for the no-op span (tracing off). */
export function traceRefOf(span: Span | undefined): TraceRef | null {
  const sc = span?.spanContext();
  return sc && isSpanContextValid(sc) ? { traceId: sc.traceId, spanId: sc.spanId } : null;
}

/** The active span's ids (for events and logs); null outside any span or with tracing off. */
export function activeTraceIds(): TraceRef | null {
  return traceRefOf(trace.getActiveSpan());
}

/** Stamps the active trace id on the envelope of events that carry none (events.trace_id). */
export function withTraceId(events: NewEvent[]): NewEvent[] {
  const ids = activeTraceIds();
  return ids ? events.map((e) => (e.traceId ? e : { ...e, traceId: ids.traceId })) : events;
}

function fail(span: Span, errorType: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The class name of an error, never its message (which may quote data). */
function errorTypeOf(e: unknown): string {
  return e instanceof Error ? e.name || 'Error' : typeof e;
}

/**
 * Runs `fn` inside a child span of the active one; sync or async. A throw or rejection marks the
 * span failed with the error's class name (not its message) and is rethrown.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => T): T {
  const span = tracer().startSpan(name, { attributes });
  let result: T;
  try {
    result = context.with(trace.setSpan(context.active(), span), fn, undefined, span);
  } catch (e) {
    fail(span, errorTypeOf(e));
    span.end();
    throw e;
  }
  if (result instanceof Promise) {
    return result.then(
      (v: unknown) => {
        span.end();
        return v;
      },
      (e: unknown) => {
        fail(span, errorTypeOf(e));
        span.end();
        throw e;
      },
    ) as T;
  }
  span.end();
  return result;
}

/**
 * The `agent.run` span of one attempt, started by the worker *before* it claims, so that a run's
 * first claim can store this span as the run's trace root (`run.started` v2). When the claim turns
 * out to resume a run that already has a root, this span is dropped unended (never exported) and
 * the run loop starts a child of the stored root instead. With tracing off it is the no-op span.
 */
export class AttemptSpan {
  private constructor(readonly span: Span) {}

  static begin(): AttemptSpan {
    return new AttemptSpan(tracer().startSpan('agent.run', { root: true }));
  }

  /** What the claim stores as the trace root when the run has none yet. */
  get proposed(): TraceRef | null {
    return traceRefOf(this.span);
  }
}

const BUDGET_KINDS: Readonly<Record<string, string>> = {
  max_steps_exceeded: 'steps',
  max_model_calls_exceeded: 'model_calls',
  max_tool_calls_exceeded: 'tool_calls',
  token_budget_exceeded: 'tokens',
  cost_budget_exceeded: 'cost',
  deadline_exceeded: 'deadline',
};

/** The trace root of a resumed run as a remote parent context. */
function remoteContext(ref: TraceRef): SpanContext {
  return { traceId: ref.traceId, spanId: ref.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
}

/**
 * Spans and metrics of one run loop: the run attempt, model calls, tool executions and
 * checkpoints. Owned by the RunLoop; the ToolPipeline receives the same metrics port.
 */
export class RunTelemetry {
  constructor(
    readonly metrics: Metrics,
    private readonly runs: Pick<RunRepository, 'get'>,
    private readonly nowMs: () => number,
  ) {}

  /**
   * One attempt of a run under its `agent.run` span. The first traced attempt is the run's trace
   * root; a later attempt (another worker, after a crash, an approval or a release) is a child of
   * that stored root and links to it, so the whole run is one trace (ADR 0015).
   */
  async attempt<R extends string>(
    claim: RunClaim,
    pre: AttemptSpan | undefined,
    fn: () => Promise<R>,
    /** The run row as the attempt's own terminal write left it, when the caller holds it (saves a read). */
    finalRun?: () => RunRecord | null,
  ): Promise<R> {
    const stored = claim.trace ?? null;
    const proposed = pre?.proposed ?? null;
    let span: Span;
    if (stored && !(proposed && proposed.traceId === stored.traceId && proposed.spanId === stored.spanId)) {
      const parent = remoteContext(stored);
      span = tracer().startSpan(
        'agent.run',
        { links: [{ context: parent }], attributes: { 'run.resumed': true } },
        trace.setSpanContext(ROOT_CONTEXT, parent),
      );
    } else {
      span = pre?.span ?? tracer().startSpan('agent.run', { root: true });
    }
    span.setAttributes({
      'run.id': claim.runId,
      'session.id': claim.sessionId,
      'tenant.id': claim.tenantId,
      'run.attempt': claim.attempt,
    });
    // A child run of delegate.run has its own trace, linked to its parent's span (ADR 0037).
    const parentTrace = claim.preloaded?.run.delegation?.parentTrace;
    if (parentTrace) span.addLink({ context: remoteContext(parentTrace), attributes: { 'link.kind': 'delegated_by' } });
    const parentRunId = claim.preloaded?.run.parentRunId;
    if (parentRunId) span.setAttribute('run.parent_id', parentRunId);
    if (claim.attempt === 1) this.metrics.runStarted();
    if (claim.recovered) {
      this.metrics.runRecovered();
      span.setAttribute('run.recovered', true);
    }
    return context.with(trace.setSpan(ROOT_CONTEXT, span), async () => {
      try {
        const result = await fn();
        span.setAttribute('run.result', result);
        if (result === 'finished') await this.recordOutcome(claim.runId, span, finalRun?.() ?? null);
        return result;
      } catch (e) {
        fail(span, errorTypeOf(e));
        throw e;
      } finally {
        span.end();
      }
    });
  }

  /** Agent id and version on the active `agent.run` span (known once the run is loaded). */
  annotateRun(agent: { readonly id: string; readonly version: number }): void {
    trace.getActiveSpan()?.setAttributes({ 'agent.id': agent.id, 'agent.version': agent.version });
  }

  private async recordOutcome(runId: string, span: Span, known: RunRecord | null): Promise<void> {
    try {
      const run = known && TERMINAL_STATUSES.includes(known.status) ? known : await this.runs.get(runId, null);
      if (!run || !TERMINAL_STATUSES.includes(run.status)) return;
      const status = run.status as RunEndStatus;
      const started = run.startedAt ? Date.parse(run.startedAt) : NaN;
      const ended = run.completedAt ? Date.parse(run.completedAt) : this.nowMs();
      const duration = Number.isFinite(started) ? Math.max(0, (ended - started) / 1000) : null;
      const reason = run.failure?.reason ?? null;
      this.metrics.runFinished(status, duration, reason);
      const budget = reason ? BUDGET_KINDS[reason] : undefined;
      if (budget) this.metrics.budgetExceeded(budget);
      span.setAttributes({
        'run.status': status,
        'run.step_count': run.stepCount,
        'usage.input_tokens': totalInputTokens(run.usage),
        'usage.output_tokens': run.usage.outputTokens,
      });
      if (status === 'failed') fail(span, reason ?? 'unknown');
    } catch {
      // Telemetry never fails a run.
    }
  }

  /** `context.build` around the context builder; records the prefix hash and tool count only. */
  async contextBuild<
    T extends { readonly request: { readonly prefixHash: string; readonly tools: readonly unknown[] } },
  >(step: number, fn: () => Promise<T>): Promise<T> {
    return inSpan('context.build', { 'run.step': step }, async (span) => {
      const built = await fn();
      span.setAttributes({
        'context.prefix_hash': built.request.prefixHash,
        'context.tool_count': built.request.tools.length,
      });
      return built;
    });
  }

  /**
   * `model.invoke` around one model call attempt; `observe` wraps the provider stream in
   * `model.stream` (time to first event). Records model_calls_total, the latency and TTFT
   * histograms and tokens by class; the status is `ok` or the classified error code.
   */
  async modelInvoke(
    model: ResolvedModel,
    call: { readonly step: number; readonly attempt: number; readonly signal: AbortSignal },
    fn: (observe: (stream: AsyncIterable<ModelEvent>) => AsyncIterable<ModelEvent>) => Promise<ModelTurn>,
  ): Promise<ModelTurn> {
    const t0 = this.nowMs();
    let firstEventMs: number | null = null;
    const observe = (stream: AsyncIterable<ModelEvent>) =>
      observeStream(stream, () => {
        firstEventMs ??= this.nowMs();
      });
    const sample = (status: string) => ({
      provider: model.provider,
      model: model.model,
      status,
      durationSeconds: (this.nowMs() - t0) / 1000,
      timeToFirstTokenSeconds: firstEventMs === null ? null : (firstEventMs - t0) / 1000,
    });
    return inSpan(
      'model.invoke',
      {
        'model.provider': model.provider,
        'model.name': model.model,
        'run.step': call.step,
        'model.attempt': call.attempt,
      },
      async (span) => {
        try {
          const turn = await fn(observe);
          const u = turn.usage;
          const tokens: Record<TokenClass, number> = {
            uncached_input: u.uncachedInputTokens,
            cached_input: u.cachedInputTokens,
            cache_write: u.cacheWriteTokens,
            output: u.outputTokens,
            reasoning: u.reasoningTokens,
          };
          span.setAttributes({
            'model.stop_reason': turn.stopReason,
            'usage.input_tokens': u.uncachedInputTokens + u.cachedInputTokens + u.cacheWriteTokens,
            'usage.output_tokens': u.outputTokens,
            'usage.reasoning_tokens': u.reasoningTokens,
            'model.tool_call_count': turn.toolCalls.length,
          });
          this.metrics.modelCall({ ...sample('ok'), tokens });
          return turn;
        } catch (e) {
          const code = call.signal.aborted ? 'aborted' : classifyModelError(e).code;
          this.metrics.modelCall(sample(code));
          span.setAttribute('error.type', code);
          throw e;
        }
      },
    );
  }

  /** `policy.evaluate` around the deterministic policy; records the decision, never the arguments. */
  policyEvaluate<D extends { readonly decision: string; readonly reasonCode: string; readonly policyVersion: string }>(
    spec: ToolSpec,
    fn: () => D,
  ): D {
    return inSpan('policy.evaluate', { 'tool.name': spec.name, 'tool.version': spec.version }, (span) => {
      const d = fn();
      span.setAttributes({
        'policy.decision': d.decision,
        'policy.reason_code': d.reasonCode,
        'policy.version': d.policyVersion,
        'approval.required': d.decision === 'require_approval',
      });
      return d;
    });
  }

  /** `tool.execute` around a tool's execution; records tool_duration_seconds. */
  toolExecute(spec: ToolSpec, invocationId: string, fn: () => Promise<ToolResult>): Promise<ToolResult> {
    const t0 = this.nowMs();
    return inSpan(
      'tool.execute',
      { 'tool.name': spec.name, 'tool.version': spec.version, 'tool.invocation_id': invocationId },
      async (span) => {
        const result = await fn();
        const status: ToolCallStatus = result.ok ? 'succeeded' : 'failed';
        span.setAttribute('tool.status', status);
        if (!result.ok) fail(span, result.errorCode);
        this.metrics.toolDuration(spec.name, status, (this.nowMs() - t0) / 1000);
        return result;
      },
    );
  }

  /**
   * `checkpoint.save` for checkpoints queued earlier that the write `fn` commits (a pure tool
   * step's model response): siblings of the write's own spans, ending when it settles.
   */
  checkpointsSavedBy<T>(
    runId: string,
    checkpoints: readonly { version: number; phase: string; step: number }[],
    fn: () => Promise<T>,
  ): Promise<T> {
    if (checkpoints.length === 0) return fn();
    const spans = checkpoints.map((c) =>
      tracer().startSpan('checkpoint.save', {
        attributes: {
          'run.id': runId,
          'checkpoint.version': c.version,
          'checkpoint.phase': c.phase,
          'run.step': c.step,
          'checkpoint.queued': true,
        },
      }),
    );
    return fn().then(
      (v) => {
        for (const span of spans) span.end();
        return v;
      },
      (e: unknown) => {
        for (const span of spans) {
          fail(span, errorTypeOf(e));
          span.end();
        }
        throw e;
      },
    );
  }

  /** `checkpoint.save` around the fenced append that writes a checkpoint. */
  checkpointSave<T>(runId: string, checkpoint: { version: number; phase: string; step: number }, fn: () => T): T {
    return inSpan(
      'checkpoint.save',
      {
        'run.id': runId,
        'checkpoint.version': checkpoint.version,
        'checkpoint.phase': checkpoint.phase,
        'run.step': checkpoint.step,
      },
      fn,
    );
  }
}

/** Wraps a provider stream in a `model.stream` span (a child of the active `model.invoke`). */
async function* observeStream(stream: AsyncIterable<ModelEvent>, onFirst: () => void): AsyncIterable<ModelEvent> {
  const span = tracer().startSpan('model.stream');
  let events = 0;
  try {
    for await (const e of stream) {
      if (events === 0) onFirst();
      events += 1;
      if (e.type === 'completed') span.setAttribute('model.stop_reason', e.stopReason);
      if (e.type === 'failed') fail(span, e.kind);
      yield e;
    }
  } catch (e) {
    fail(span, errorTypeOf(e));
    throw e;
  } finally {
    span.setAttribute('model.stream_events', events);
    span.end();
  }
}

/** `sandbox.execute`, for the sandbox tool: a child of the active `tool.execute`. */
export function traceSandboxExecution<T>(
  attrs: {
    readonly runtime: string;
    readonly image?: string;
    readonly timeoutSeconds?: number;
    readonly networkPolicy?: string;
  },
  fn: (recordExit: (exitCode: number | null, timedOut: boolean) => void) => T,
): T {
  const attributes: Attributes = { 'sandbox.runtime': attrs.runtime };
  if (attrs.image !== undefined) attributes['sandbox.image'] = attrs.image;
  if (attrs.timeoutSeconds !== undefined) attributes['sandbox.timeout_seconds'] = attrs.timeoutSeconds;
  if (attrs.networkPolicy !== undefined) attributes['sandbox.network_policy'] = attrs.networkPolicy;
  return inSpan('sandbox.execute', attributes, (span) =>
    fn((exitCode, timedOut) => {
      if (exitCode !== null) span.setAttribute('sandbox.exit_code', exitCode);
      span.setAttribute('sandbox.timed_out', timedOut);
    }),
  );
}

/** `artifact.store`, for the artifact store: ids, media type and size — never the content. */
export function traceArtifactStore<T>(
  attrs: { readonly artifactId?: string; readonly mediaType: string; readonly origin?: string },
  fn: (recordStored: (sizeBytes: number, artifactId?: string) => void) => T,
): T {
  const attributes: Attributes = { 'artifact.media_type': attrs.mediaType };
  if (attrs.artifactId !== undefined) attributes['artifact.id'] = attrs.artifactId;
  if (attrs.origin !== undefined) attributes['artifact.origin'] = attrs.origin;
  return inSpan('artifact.store', attributes, (span) =>
    fn((sizeBytes, artifactId) => {
      span.setAttribute('artifact.size_bytes', sizeBytes);
      if (artifactId !== undefined) span.setAttribute('artifact.id', artifactId);
    }),
  );
}
