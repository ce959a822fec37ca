import type { Billing, PriceTable } from '../run/usage';
import type { ModelCapabilities } from './capabilities';

/**
 * Declarative provider profiles (plan §10.5, §10.7): adding a model or an OpenAI-compatible
 * endpoint is configuration, not code. Profiles are loaded from versioned YAML under
 * `config/providers/` by the profile loader (an adapter); these are their validated shapes.
 */

export const API_MODES = ['responses', 'anthropic', 'chat_completions'] as const;
export type ApiMode = (typeof API_MODES)[number];

/** How a chat_completions model asks for tools: native `tool_calls`, or `<tool_call>` blocks in its text. */
export type ToolCallFormat = 'native' | 'xml';

export interface ProfileModel {
  /** The provider's model id, sent on the wire. */
  readonly id: string;
  /** Other names a model policy may use for it (`openai:default`). */
  readonly aliases: readonly string[];
  readonly capabilities: ModelCapabilities;
  readonly contextLimit: number | null;
  /** Used when the request sets none (Anthropic requires `max_tokens`). */
  readonly maxOutputTokens: number | null;
  /** Catalog prices per million tokens, by class (cost source `catalog_price`); null when the profile lists none. */
  readonly prices: PriceTable | null;
  /**
   * The profile's `price_override` for this model (cost source `config_override`): the last
   * resort of plan §6.5, used only when neither the profile nor the pricing snapshot prices it.
   */
  readonly priceOverride: PriceTable | null;
  /** OpenAI Responses `reasoning.effort` / `reasoning.summary`, when set. */
  readonly reasoningEffort: string | null;
  readonly reasoningSummary: string | null;
  /** Anthropic extended thinking budget; null leaves thinking off. */
  readonly thinkingBudgetTokens: number | null;
  readonly toolCallFormat: ToolCallFormat;
}

export interface ProviderProfile {
  /** Also the provider name recorded on every model call (`model_calls.provider`). */
  readonly name: string;
  /** Bumped by whoever edits the profile; recorded with the price history. */
  readonly version: number;
  readonly apiMode: ApiMode;
  /** OpenAI-style base URLs include `/v1`; Anthropic's does not (the SDK appends `/v1/messages`). */
  readonly baseUrl: string;
  /** Name of the environment variable holding the key; null for keyless local endpoints. */
  readonly credentialEnv: string | null;
  readonly models: readonly ProfileModel[];
  /** Strip reasoning before the next request (strict OpenAI-compatible endpoints reject it). */
  readonly stripReasoning: boolean;
  /** Ask for usage on the stream (`stream_options.include_usage`); some endpoints reject it. */
  readonly streamUsage: boolean;
  /** Per-request timeout for this endpoint, in ms. */
  readonly timeoutMs: number;
  /** The file it came from (for error messages). */
  readonly source: string;
}

/** A named model policy (`balanced`) mapped to a profile and one of its models or aliases. */
export interface ModelPolicyTarget {
  readonly profile: string;
  readonly model: string;
  /**
   * Ordered `<profile>:<model or alias>` references the run continues on when this model (then each
   * fallback in turn) keeps answering rate-limit, quota or overloaded errors (issue 33, ADR 0046).
   */
  readonly fallbacks?: readonly string[];
}

/**
 * The documented pricing snapshot (`config/providers/pricing-snapshot.yaml`): published list
 * prices keyed by provider and model id, used for a profile model that lists no prices of its own
 * (cost source `pricing_snapshot`).
 */
export interface PricingSnapshot {
  /** The snapshot's declared version (`version:` in the file); `none` when there is no file. */
  readonly version: string;
  /** The file it came from (for error messages and the price history). */
  readonly source: string;
  /** `<provider>/<model id>` → prices. */
  readonly prices: Readonly<Record<string, PriceTable>>;
}

export const EMPTY_PRICING_SNAPSHOT: PricingSnapshot = { version: 'none', source: 'none', prices: {} };

export function snapshotKey(provider: string, model: string): string {
  return `${provider}/${model}`;
}

/** Every profile and policy, with a fingerprint of the files that produced them. */
export interface ProviderRegistry {
  /** `r<declared version>-<sha256 prefix of the files>`: changes whenever any profile changes. */
  readonly version: string;
  readonly profiles: readonly ProviderProfile[];
  readonly policies: Readonly<Record<string, ModelPolicyTarget>>;
  /** Absent is the same as an empty snapshot. */
  readonly pricingSnapshot?: PricingSnapshot;
}

export const EMPTY_REGISTRY: ProviderRegistry = {
  version: 'none',
  profiles: [],
  policies: {},
  pricingSnapshot: EMPTY_PRICING_SNAPSHOT,
};

/**
 * The price table of a profile model by the table-priced part of plan §6.5's precedence: the
 * profile's own prices (`catalog_price`) > the pricing snapshot (`pricing_snapshot`) > the
 * profile's `price_override` (`config_override`). Null when none prices it (the loader refuses
 * such a model at startup).
 */
export function modelBilling(
  profile: ProviderProfile,
  model: ProfileModel,
  snapshot: PricingSnapshot = EMPTY_PRICING_SNAPSHOT,
): Extract<Billing, { kind: 'price_table' }> | null {
  if (model.prices) return { kind: 'price_table', prices: model.prices, source: 'catalog_price' };
  const snap = snapshot.prices[snapshotKey(profile.name, model.id)];
  if (snap) return { kind: 'price_table', prices: snap, source: 'pricing_snapshot' };
  if (model.priceOverride) return { kind: 'price_table', prices: model.priceOverride, source: 'config_override' };
  return null;
}

/** The model of `profile` that `nameOrAlias` names, or null. */
export function findProfileModel(profile: ProviderProfile, nameOrAlias: string): ProfileModel | null {
  return (
    profile.models.find((m) => m.id === nameOrAlias) ??
    profile.models.find((m) => m.aliases.includes(nameOrAlias)) ??
    null
  );
}
