import Decimal from 'decimal.js';

/** Token classes of plan §6.5/§10.2, plus Anthropic's cache-write as the fifth class. */
export interface TokenUsage {
  readonly uncachedInputTokens: number;
  readonly cachedInputTokens: number;
  readonly cacheWriteTokens: number;
  readonly outputTokens: number;
  readonly reasoningTokens: number;
}

export type CostSource = 'provider_response' | 'provider_usage_api' | 'catalog_price' | 'pricing_snapshot' | 'config_override' | 'free';

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

/** Per-million-token prices by class, as decimal strings (from provider profiles, never hard-coded). */
export interface PriceTable {
  readonly uncachedInputPerMillion: string;
  readonly cachedInputPerMillion: string;
  readonly cacheWritePerMillion: string;
  readonly outputPerMillion: string;
  /** Reasoning is billed as output unless a profile says otherwise. */
  readonly reasoningPerMillion?: string;
}

export function costOf(u: TokenUsage, p: PriceTable): string {
  const m = new Decimal(1_000_000);
  const cost = new Decimal(u.uncachedInputTokens)
    .times(p.uncachedInputPerMillion)
    .plus(new Decimal(u.cachedInputTokens).times(p.cachedInputPerMillion))
    .plus(new Decimal(u.cacheWriteTokens).times(p.cacheWritePerMillion))
    .plus(new Decimal(u.outputTokens).times(p.outputPerMillion))
    .plus(new Decimal(u.reasoningTokens).times(p.reasoningPerMillion ?? '0'))
    .div(m);
  return cost.toString();
}
