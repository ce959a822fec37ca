import type { ConversationItem, ProviderReasoningItem, ToolCallItem } from '../conversation/items';
import type { TokenUsage } from '../run/usage';

/**
 * The normalized model stream (plan §10.2). Every provider stream ends with exactly one
 * `completed` or `failed` event; only the usage on `completed` is authoritative.
 */
export type ReasoningDeltaEvent = { readonly type: 'reasoning_delta'; readonly text: string };
export type TextDeltaEvent = { readonly type: 'text_delta'; readonly text: string };
export type ToolCallDeltaEvent = {
  readonly type: 'tool_call_delta';
  /** Position of the call within the turn; deltas with the same index belong to one call. */
  readonly index: number;
  readonly callId?: string;
  readonly name?: string;
  /** A fragment of the JSON arguments; assembled and parsed only after `completed`. */
  readonly argumentsDelta: string;
};
export type ReasoningItemEvent = { readonly type: 'reasoning_item'; readonly item: ProviderReasoningItem };
export type UsageEvent = { readonly type: 'usage'; readonly usage: TokenUsage; readonly provisional: boolean };
export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'incomplete' | 'content_filter';
export type ModelCompletedEvent = {
  readonly type: 'completed';
  readonly stopReason: StopReason;
  readonly usage: TokenUsage;
  /** Cost reported by the provider itself, when it reports one (decimal string). */
  readonly providerCost?: string;
  readonly providerMetadata: Readonly<Record<string, string>>;
};
export type ModelFailureKind = 'transient' | 'permanent' | 'protocol';
export type ModelFailedEvent = {
  readonly type: 'failed';
  readonly kind: ModelFailureKind;
  readonly message: string;
  readonly providerCode?: string;
  /** How long the provider asked us to wait (`retry-after` / `retry-after-ms`), for transient failures. */
  readonly retryAfterMs?: number;
  /** The HTTP status, when the failure was an HTTP error response. */
  readonly httpStatus?: number;
};

export type ModelEvent =
  | ReasoningDeltaEvent
  | TextDeltaEvent
  | ToolCallDeltaEvent
  | ReasoningItemEvent
  | UsageEvent
  | ModelCompletedEvent
  | ModelFailedEvent;

/** A tool definition as the model sees it (the portable part of a ToolSpec). */
export interface ModelToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

export interface CacheBreakpoint {
  readonly boundary: 'after_system' | 'after_tools' | 'after_history_prefix';
  readonly minTokens: number;
  readonly ttl: 'default' | '1h';
}

export interface ModelRequest {
  readonly modelPolicy: string;
  /** Byte-stable prefix: platform policy + agent instructions (+ tool definitions below). */
  readonly system: string;
  readonly tools: readonly ModelToolDefinition[];
  readonly conversation: readonly ConversationItem[];
  readonly maximumOutputTokens: number | null;
  readonly temperature: number | null;
  readonly cacheHints: readonly CacheBreakpoint[];
  /** SHA-256 of the cacheable prefix (system + tools), recorded on every model request. */
  readonly prefixHash: string;
  readonly metadata: Readonly<Record<string, string>>;
}

/** One call's identity: every attempt (including retries) has its own id. */
export interface ModelAttempt {
  readonly attemptId: string;
  readonly attemptNumber: number;
  /** Absolute deadline (epoch ms) the adapter must respect. */
  readonly deadlineMs: number | null;
  readonly signal?: AbortSignal;
}

export interface ResolvedModel {
  readonly provider: string;
  readonly model: string;
  readonly contextLimit: number | null;
  /** The provider profile's declared version, when the model came from a profile. */
  readonly profileVersion?: number;
  /** The provider registry fingerprint the route was resolved against. */
  readonly registryVersion?: string;
}

/** A stream folded into one turn by the shared assembler. */
export interface ModelTurn {
  readonly text: string;
  readonly toolCalls: readonly ToolCallItem[];
  /** Tool calls whose argument JSON did not parse: a protocol problem, reported to the model. */
  readonly malformedToolCalls: readonly { readonly callId: string; readonly name: string; readonly raw: string }[];
  readonly reasoningItems: readonly ProviderReasoningItem[];
  readonly usage: TokenUsage;
  readonly stopReason: StopReason;
  readonly providerCost?: string;
  readonly providerMetadata: Readonly<Record<string, string>>;
}
