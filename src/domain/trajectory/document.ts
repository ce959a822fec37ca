import Decimal from 'decimal.js';
import type { EventPayloads, StoredEvent } from '../events/payloads';
import { RUN_ENDING_EVENTS } from '../run/status';

/**
 * The exported trajectory (plan §31.1, ADR 0016): one versioned JSON document per run in the
 * messages shape (OpenAI chat: system, user, assistant with `tool_calls`, `tool` results), with the
 * run's outcome labelled `succeeded` or `failed`, and its usage and model metadata. ShareGPT is the
 * role rename a consumer can apply. Field names are snake_case, as on the wire of the HTTP API.
 */
export const TRAJECTORY_FORMAT = 'agent-core.trajectory';
export const TRAJECTORY_SCHEMA_VERSION = 1;

export type TrajectoryLabel = 'succeeded' | 'failed';
export type TerminalStatus = 'completed' | 'failed' | 'cancelled';

export interface WireToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

export type TrajectoryMessage =
  | { readonly role: 'system'; readonly content: string }
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string | null; readonly tool_calls?: readonly WireToolCall[] }
  | {
      readonly role: 'tool';
      readonly tool_call_id: string;
      readonly name: string;
      readonly content: string;
      readonly is_error: boolean;
    };

export interface TrajectoryModelCall {
  readonly step: number;
  readonly attempt: number;
  readonly provider: string;
  readonly model: string;
  readonly status: 'completed' | 'failed';
  readonly stop_reason: string | null;
  readonly error_code: string | null;
  readonly usage: TrajectoryUsage | null;
  readonly cost_source: string | null;
  readonly latency_ms: number;
}

export interface TrajectoryUsage {
  readonly uncached_input_tokens: number;
  readonly cached_input_tokens: number;
  readonly cache_write_tokens: number;
  readonly output_tokens: number;
  readonly reasoning_tokens: number;
  /** Decimal string (USD). */
  readonly cost: string;
}

export interface TrajectoryDocument {
  readonly format: typeof TRAJECTORY_FORMAT;
  readonly schema_version: typeof TRAJECTORY_SCHEMA_VERSION;
  readonly run_id: string;
  readonly session_id: string;
  readonly tenant_id: string;
  readonly principal_id: string;
  readonly agent: { readonly id: string; readonly version: number };
  readonly model_policy: string;
  readonly limits: Record<string, unknown>;
  readonly created_at: string;
  readonly ended_at: string;
  readonly outcome: {
    readonly label: TrajectoryLabel;
    readonly status: TerminalStatus;
    /** Why it failed: a `run.failed` reason (`max_steps_exceeded`, …) or `cancelled`; null when it succeeded. */
    readonly reason: string | null;
    readonly message: string | null;
    readonly error_code: string | null;
  };
  readonly messages: readonly TrajectoryMessage[];
  /** Every model call attempt (retries included), in order. */
  readonly model_calls: readonly TrajectoryModelCall[];
  /** Distinct `provider:model` pairs that answered. */
  readonly models: readonly string[];
  readonly usage: TrajectoryUsage;
  /** What the export left out or replaced (never the values). */
  readonly redaction: {
    readonly replaced: number;
    readonly rules: readonly string[];
    readonly excluded: readonly string[];
  };
  /** A child run's parent (`run.delegated`); absent for a turn. */
  readonly parent_run_id?: string;
  /**
   * The run's child runs (delegate.run's briefs, consensus rounds) as documents of their own, in the
   * order they were created; absent for a run without children (issue 32).
   */
  readonly children?: readonly TrajectoryDocument[];
}

/** What the builder needs besides the run's events. */
export interface BuildContext {
  /** The system prompt of the run's agent version (platform policy + instructions); null when unknown. */
  readonly systemPrompt: string | null;
}

/** The consent the run was stamped with at its first start (`run.consent_stamped`). */
export interface RunConsentStamp {
  readonly principalId: string;
  readonly trajectoryExport: 'granted' | 'withdrawn' | 'absent';
  readonly consentVersion: number | null;
}

/**
 * The document before its final serialisation: tool-call arguments and tool results are still JSON
 * values, so redaction can work by key as well as by pattern. `finalizeTrajectory` makes the wire form.
 */
export interface DraftTrajectory {
  readonly doc: Omit<TrajectoryDocument, 'messages' | 'redaction'>;
  readonly messages: DraftMessage[];
  readonly consent: RunConsentStamp | null;
  readonly excluded: string[];
}

export type DraftMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: DraftToolCall[] }
  | { role: 'tool'; tool_call_id: string; name: string; content: unknown; is_error: boolean };

export interface DraftToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

/**
 * Builds a run's trajectory from its events (the log is the truth), oldest first. Structural
 * exclusion happens here: only the listed fields are copied, so raw reasoning (never persisted) and
 * provider-opaque items (never in the log) cannot appear, and artifact bytes are never inlined.
 * Returns null for a run that has not ended (it has no outcome yet).
 */
export function buildTrajectory(events: readonly StoredEvent[], ctx: BuildContext): DraftTrajectory | null {
  const first = events[0];
  if (!first) return null;
  const fold = new TrajectoryFold(ctx.systemPrompt);
  for (const e of events) fold.apply(e);
  const { terminal, queued } = fold;
  if (!terminal || !queued) return null;
  const outcome = outcomeOf(terminal);
  if (!outcome) return null;
  const { modelCalls, total } = fold;
  const models = [
    ...new Set(modelCalls.filter((c) => c.status === 'completed').map((c) => `${c.provider}:${c.model}`)),
  ];
  return {
    doc: {
      format: TRAJECTORY_FORMAT,
      schema_version: TRAJECTORY_SCHEMA_VERSION,
      run_id: terminal.runId ?? first.runId ?? '',
      session_id: first.sessionId,
      tenant_id: first.tenantId,
      principal_id: queued.principalId,
      agent: { id: queued.agentId, version: queued.agentVersion },
      model_policy: queued.modelPolicy,
      limits: snakeKeys(queued.limits as unknown as Record<string, unknown>),
      created_at: first.createdAt,
      ended_at: terminal.createdAt,
      outcome,
      model_calls: modelCalls,
      models,
      usage: {
        uncached_input_tokens: total.uncached,
        cached_input_tokens: total.cached,
        cache_write_tokens: total.write,
        output_tokens: total.output,
        reasoning_tokens: total.reasoning,
        cost: total.cost.toString(),
      },
    },
    messages: fold.messages,
    consent: fold.consent,
    excluded: [...fold.excluded].sort(),
  };
}

type ToolOutcomeEvent = StoredEvent<'tool.call.completed' | 'tool.call.failed' | 'tool.call.denied'>;

/** The run's events folded, oldest first, into messages, model calls, usage and the facts the document needs. */
class TrajectoryFold {
  readonly messages: DraftMessage[] = [];
  readonly excluded = new Set<string>();
  readonly modelCalls: TrajectoryModelCall[] = [];
  queued: EventPayloads['run.queued'] | null = null;
  consent: RunConsentStamp | null = null;
  terminal: StoredEvent | null = null;
  total = { uncached: 0, cached: 0, write: 0, output: 0, reasoning: 0, cost: new Decimal(0) };
  private readonly callsByKey = new Map<string, DraftToolCall>();
  private readonly toolByInvocation = new Map<string, { callId: string; name: string }>();
  private readonly resultByInvocation = new Map<string, DraftMessage & { role: 'tool' }>();
  private readonly startedCalls = new Map<string, { provider: string; model: string }>();

  constructor(systemPrompt: string | null) {
    if (systemPrompt !== null) this.messages.push({ role: 'system', content: systemPrompt });
  }

  apply(e: StoredEvent): void {
    switch (e.type) {
      case 'run.queued':
        this.queued = e.data;
        break;
      case 'run.consent_stamped':
        this.consent ??= e.data;
        break;
      case 'user.message.created':
        this.userMessage(e);
        break;
      case 'model.request.started':
        this.startedCalls.set(e.data.modelCallId, { provider: e.data.provider, model: e.data.model });
        break;
      case 'model.response.completed':
        this.modelAnswered(e);
        break;
      case 'model.request.failed':
        this.modelFailed(e);
        break;
      case 'tool.call.proposed': {
        const call = this.callsByKey.get(`${e.data.step}\u0000${e.data.callId}`);
        if (call) call.arguments = e.data.arguments;
        this.toolByInvocation.set(e.data.invocationId, { callId: e.data.callId, name: e.data.toolName });
        break;
      }
      case 'tool.call.completed':
      case 'tool.call.failed':
      case 'tool.call.denied':
        this.toolOutcome(e);
        break;
      case 'assistant.message.completed':
        this.messages.push({ role: 'assistant', content: e.data.text });
        break;
      default:
        if (RUN_ENDING_EVENTS.has(e.type)) this.terminal = e;
        break;
    }
  }

  /** Only the text parts are exported; an attachment is noted as excluded, never inlined. */
  private userMessage(e: StoredEvent<'user.message.created'>): void {
    const text = e.data.content
      .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
      .map((p) => p.text)
      .join('');
    if (e.data.content.some((p) => p.type !== 'text')) this.excluded.add('artifact_content');
    this.messages.push({ role: 'user', content: text });
  }

  private who(modelCallId: string): { provider: string; model: string } {
    return this.startedCalls.get(modelCallId) ?? { provider: 'unknown', model: 'unknown' };
  }

  private modelAnswered(e: StoredEvent<'model.response.completed'>): void {
    const who = this.who(e.data.modelCallId);
    const u = e.data.usage;
    const total = this.total;
    this.total = {
      uncached: total.uncached + u.uncachedInputTokens,
      cached: total.cached + u.cachedInputTokens,
      write: total.write + u.cacheWriteTokens,
      output: total.output + u.outputTokens,
      reasoning: total.reasoning + u.reasoningTokens,
      cost: total.cost.plus(e.data.cost),
    };
    this.modelCalls.push({
      step: e.data.step,
      attempt: e.data.attempt,
      provider: who.provider,
      model: who.model,
      status: 'completed',
      stop_reason: e.data.stopReason,
      error_code: null,
      usage: usageOf(u, e.data.cost),
      cost_source: e.data.costSource,
      latency_ms: e.data.latencyMs,
    });
    if (u.reasoningTokens > 0) this.excluded.add('reasoning');
    if (e.data.toolCalls.length > 0) {
      const calls = e.data.toolCalls.map((c) => {
        const call: DraftToolCall = { id: c.callId, name: c.name, arguments: {} };
        this.callsByKey.set(`${e.data.step}\u0000${c.callId}`, call);
        return call;
      });
      // The text of a tool-using turn is not persisted (only its length), so it is not exported.
      this.messages.push({ role: 'assistant', content: null, tool_calls: calls });
    }
  }

  private modelFailed(e: StoredEvent<'model.request.failed'>): void {
    const who = this.who(e.data.modelCallId);
    this.modelCalls.push({
      step: e.data.step,
      attempt: e.data.attempt,
      provider: who.provider,
      model: who.model,
      status: 'failed',
      stop_reason: null,
      error_code: e.data.errorCode,
      usage: null,
      cost_source: null,
      latency_ms: e.data.latencyMs,
    });
  }

  /** A call's outcome is its tool message; a later outcome of the same invocation replaces the content. */
  private toolOutcome(e: ToolOutcomeEvent): void {
    const call = this.toolByInvocation.get(e.data.invocationId);
    if (!call) return;
    const content =
      e.type === 'tool.call.completed'
        ? e.data.result
        : e.type === 'tool.call.failed'
          ? { error: { code: e.data.errorCode, message: e.data.message } }
          : { error: { code: e.data.reasonCode, message: e.data.explanation } };
    const prior = this.resultByInvocation.get(e.data.invocationId);
    if (prior) {
      prior.content = content;
      prior.is_error = e.type !== 'tool.call.completed';
      return;
    }
    const msg = {
      role: 'tool' as const,
      tool_call_id: call.callId,
      name: call.name,
      content,
      is_error: e.type !== 'tool.call.completed',
    };
    this.resultByInvocation.set(e.data.invocationId, msg);
    this.messages.push(msg);
  }
}

/** How the run ended, from its terminal event; null for an event that does not end a run. */
function outcomeOf(terminal: StoredEvent): TrajectoryDocument['outcome'] | null {
  switch (terminal.type) {
    case 'run.completed':
      return { label: 'succeeded', status: 'completed', reason: null, message: null, error_code: null };
    case 'run.failed':
      return {
        label: 'failed',
        status: 'failed',
        reason: terminal.data.reason,
        message: terminal.data.message,
        error_code: terminal.data.errorCode,
      };
    case 'run.cancelled':
      return {
        label: 'failed',
        status: 'cancelled',
        reason: 'cancelled',
        message: terminal.data.reason,
        error_code: null,
      };
    default:
      return null;
  }
}

/** The wire document: arguments and tool results serialised as JSON strings (the messages shape). */
export function finalizeTrajectory(
  draft: DraftTrajectory,
  redaction: { replaced: number; rules: readonly string[] },
): TrajectoryDocument {
  const messages: TrajectoryMessage[] = draft.messages.map((m) => {
    if (m.role === 'tool') return { ...m, content: JSON.stringify(m.content ?? null) };
    if (m.role === 'assistant' && m.tool_calls)
      return {
        role: 'assistant',
        content: m.content,
        tool_calls: m.tool_calls.map((c) => ({
          id: c.id,
          type: 'function' as const,
          function: { name: c.name, arguments: JSON.stringify(c.arguments ?? {}) },
        })),
      };
    return m as TrajectoryMessage;
  });
  return {
    ...draft.doc,
    messages,
    redaction: { replaced: redaction.replaced, rules: [...redaction.rules].sort(), excluded: draft.excluded },
  };
}

function usageOf(
  u: {
    uncachedInputTokens: number;
    cachedInputTokens: number;
    cacheWriteTokens: number;
    outputTokens: number;
    reasoningTokens: number;
  },
  cost: string,
): TrajectoryUsage {
  return {
    uncached_input_tokens: u.uncachedInputTokens,
    cached_input_tokens: u.cachedInputTokens,
    cache_write_tokens: u.cacheWriteTokens,
    output_tokens: u.outputTokens,
    reasoning_tokens: u.reasoningTokens,
    cost,
  };
}

function snakeKeys(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  return out;
}

/** True when the run's stamp and the principal's current consent both allow exporting it (ADR 0016). */
export function consentAllows(
  stamp: RunConsentStamp | null,
  current: { status: 'granted' | 'withdrawn'; version: number } | undefined,
): boolean {
  return (
    stamp !== null &&
    stamp.trajectoryExport === 'granted' &&
    current !== undefined &&
    current.status === 'granted' &&
    current.version === stamp.consentVersion
  );
}
