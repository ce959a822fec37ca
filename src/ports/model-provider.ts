import type { ModelAttempt, ModelEvent, ModelRequest, ResolvedModel } from '../domain/model/model-events';
import type { TokenUsage } from '../domain/run/usage';

/**
 * A model provider adapter (plan §7, model-gateway signature). The stream ends with exactly one
 * `completed` or `failed` event; adapters never execute tools and never log keys.
 */
export interface ModelProvider {
  readonly name: string;
  stream(request: ModelRequest, model: ResolvedModel, attempt: ModelAttempt): AsyncIterable<ModelEvent>;
  close(): Promise<void>;
  /**
   * The provider's usage/billing API, when the adapter implements it (cost source
   * `provider_usage_api`, plan §6.5: below a cost reported on the response, above the catalog
   * price). It needs a network call per provider, so no adapter fills it today; see
   * docs/model-gateway.md §6.
   */
  readonly usageApi?: ProviderUsageApi;
  /**
   * The context window of a model of an offline provider (profiles declare theirs in
   * `context_limit`); the fake provider reads it from its fixture. Absent or null: no limit known.
   */
  readonly contextLimitOf?: (model: string) => number | null;
}

/** What the run loop knows about a completed call when it asks the usage API for its cost. */
export interface UsageApiQuery {
  readonly model: ResolvedModel;
  readonly attempt: ModelAttempt;
  readonly usage: TokenUsage;
  /** Provider metadata of the completed turn (e.g. the response id), when the adapter recorded it. */
  readonly providerMetadata: Readonly<Record<string, unknown>>;
}

export interface ProviderUsageApi {
  /**
   * The billed cost of one completed call as a non-negative decimal string (USD), or null when the
   * API does not know it (yet). A rejection or a malformed figure is not an error for the run: the
   * next source of the precedence prices the call. Must honour `signal` and return promptly.
   */
  costOf(query: UsageApiQuery, signal: AbortSignal): Promise<string | null>;
}
