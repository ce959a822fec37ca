import Decimal from 'decimal.js';

/** Token classes of plan §6.5/§10.2, plus Anthropic's cache-write as the fifth class. */
export interface TokenUsage {
  readonly uncachedInputTokens: number;
  readonly cachedInputTokens: number;
  readonly cacheWriteTokens: number;
  readonly outputTokens: number;
  readonly reasoningTokens: number;
}

export type CostSource =
  'provider_response' | 'provider_usage_api' | 'catalog_price' | 'pricing_snapshot' | 'config_override' | 'free';

export interface RunUsage extends TokenUsage {
  readonly modelCalls: number;
  readonly toolCalls: number;
  /** Decimal as a string: money is never a float. */
  readonly cost: string;
}

export const ZERO_TOKENS: TokenUsage = {
  uncachedInputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
};

export const ZERO_USAGE: RunUsage = { ...ZERO_TOKENS, modelCalls: 0, toolCalls: 0, cost: '0' };

export function addTokens(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    uncachedInputTokens: a.uncachedInputTokens + b.uncachedInputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
  };
}

export function totalInputTokens(u: TokenUsage): number {
  return u.uncachedInputTokens + u.cachedInputTokens + u.cacheWriteTokens;
}

/** Usage after one model response: its tokens and its cost added (the run projection's fold of it). */
export function addResponseUsage(usage: RunUsage, response: { usage: TokenUsage; cost: string }): RunUsage {
  return { ...usage, ...addTokens(usage, response.usage), cost: addCost(usage.cost, response.cost) };
}

/** Two runs' usage together (a parent's and a child's, plan §6.5). */
export function addUsage(a: RunUsage, b: RunUsage): RunUsage {
  return {
    ...addTokens(a, b),
    modelCalls: a.modelCalls + b.modelCalls,
    toolCalls: a.toolCalls + b.toolCalls,
    cost: addCost(a.cost, b.cost),
  };
}

export function addCost(a: string, b: string): string {
  return new Decimal(a).plus(new Decimal(b)).toString();
}

/**
 * Per-million-token prices by class, as decimal strings (from provider profiles, never hard-coded).
 *
 * `TokenUsage.outputTokens` is all billed output, reasoning included (both OpenAI and Anthropic
 * report it that way); `reasoningTokens` is the part of it that was reasoning. Reasoning is
 * therefore billed as output unless a profile gives it its own price.
 */
export interface PriceTable {
  readonly uncachedInputPerMillion: string;
  readonly cachedInputPerMillion: string;
  readonly cacheWritePerMillion: string;
  readonly outputPerMillion: string;
  /** When set, reasoning tokens are billed at this price instead of the output price. */
  readonly reasoningPerMillion?: string;
}

export function costOf(u: TokenUsage, p: PriceTable): string {
  const m = new Decimal(1_000_000);
  const reasoning = Math.min(u.reasoningTokens, u.outputTokens);
  const output =
    p.reasoningPerMillion === undefined
      ? new Decimal(u.outputTokens).times(p.outputPerMillion)
      : new Decimal(u.outputTokens - reasoning)
          .times(p.outputPerMillion)
          .plus(new Decimal(reasoning).times(p.reasoningPerMillion));
  const cost = new Decimal(u.uncachedInputTokens)
    .times(p.uncachedInputPerMillion)
    .plus(new Decimal(u.cachedInputTokens).times(p.cachedInputPerMillion))
    .plus(new Decimal(u.cacheWriteTokens).times(p.cacheWritePerMillion))
    .plus(output)
    .div(m);
  // Plain notation (no exponent) so the figure reads the same in events, rows and the CLI.
  return cost.toFixed();
}

/** Where a price table came from, in the order plan §6.5 consults them (all below a provider-reported cost). */
export type PriceTableSource = 'catalog_price' | 'pricing_snapshot' | 'config_override';

/** How a routed model is billed when the provider reports no cost itself. */
export type Billing =
  /**
   * Per-class prices: the profile's own model prices (`catalog_price`), else the versioned pricing
   * snapshot (`pricing_snapshot`), else the profile's `price_override` (`config_override`).
   */
  | { readonly kind: 'price_table'; readonly prices: PriceTable; readonly source: PriceTableSource }
  /** The offline providers (fake, demo): nothing to pay. */
  | { readonly kind: 'free' };

/** True for a non-negative decimal string such as `0.0123` (a provider-reported cost). */
export function isDecimalString(value: string): boolean {
  if (!/^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/.test(value)) return false;
  return new Decimal(value).isFinite();
}

/** Costs the provider itself reported for one call; either may be absent. */
export interface ReportedCost {
  /** A cost on the response itself (OpenRouter `usage.cost`). */
  readonly providerResponse?: string | null;
  /** A cost looked up afterwards from the provider's usage/billing API (the `ProviderUsageApi` hook). */
  readonly providerUsageApi?: string | null;
}

/**
 * The cost of one model call and where it came from, by the precedence of plan §6.5:
 *   1. `provider_response`  — a cost the provider reported on the response;
 *   2. `provider_usage_api` — a cost from the provider's usage API (a hook adapters may fill; none does yet);
 *   3. `catalog_price`      — the prices of the model in its provider profile;
 *   4. `pricing_snapshot`   — the versioned pricing snapshot (config/providers/pricing-snapshot.yaml);
 *   5. `config_override`    — the profile's `price_override` for the model;
 *   and `free` for the offline providers. Steps 3–5 are resolved into `billing` by the router.
 * A reported cost that is not a non-negative decimal is ignored (the next source applies).
 * Decimal math throughout; never a float.
 */
export function priceModelCall(
  usage: TokenUsage,
  reported: ReportedCost | string | undefined,
  billing: Billing,
): { cost: string; costSource: CostSource } {
  const r: ReportedCost = typeof reported === 'string' ? { providerResponse: reported } : (reported ?? {});
  if (typeof r.providerResponse === 'string' && isDecimalString(r.providerResponse)) {
    return { cost: new Decimal(r.providerResponse).toFixed(), costSource: 'provider_response' };
  }
  if (typeof r.providerUsageApi === 'string' && isDecimalString(r.providerUsageApi)) {
    return { cost: new Decimal(r.providerUsageApi).toFixed(), costSource: 'provider_usage_api' };
  }
  switch (billing.kind) {
    case 'price_table':
      return { cost: costOf(usage, billing.prices), costSource: billing.source };
    case 'free':
      return { cost: '0', costSource: 'free' };
    default: {
      const unknown: never = billing;
      throw new Error(`unknown billing ${String(unknown)}`);
    }
  }
}
