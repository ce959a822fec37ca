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

/** How a routed model is billed when the provider reports no cost itself. */
export type Billing =
  | { readonly kind: 'catalog'; readonly prices: PriceTable }
  /** The offline providers (fake, demo): nothing to pay. */
  | { readonly kind: 'free' };

/** True for a non-negative decimal string such as `0.0123` (a provider-reported cost). */
export function isDecimalString(value: string): boolean {
  if (!/^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/.test(value)) return false;
  return new Decimal(value).isFinite();
}

/**
 * The cost of one model call and where it came from, by the precedence of plan §6.5: a cost the
 * provider reported on the response, then the catalog price of the model's profile, then free for
 * the offline providers. (The provider usage API, pricing snapshots and configured overrides are
 * lower-precedence sources no adapter uses yet.) Decimal math throughout; never a float.
 */
export function priceModelCall(
  usage: TokenUsage,
  providerCost: string | undefined,
  billing: Billing,
): { cost: string; costSource: CostSource } {
  if (providerCost !== undefined && isDecimalString(providerCost)) {
    return { cost: new Decimal(providerCost).toFixed(), costSource: 'provider_response' };
  }
  switch (billing.kind) {
    case 'catalog':
      return { cost: costOf(usage, billing.prices), costSource: 'catalog_price' };
    case 'free':
      return { cost: '0', costSource: 'free' };
    default: {
      const unknown: never = billing;
      throw new Error(`unknown billing ${String(unknown)}`);
    }
  }
}
