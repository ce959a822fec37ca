import type { Principal } from '../domain/principal';

/**
 * The dashboard's metrics panel (plan §19, issue 9 item 8), from the read models rather than one
 * process's Prometheus registry: it covers every worker, survives restarts and is scoped to the
 * principal's own runs like every other dashboard view.
 */
export interface ObservabilitySummary {
  readonly runsByStatus: Readonly<Record<string, number>>;
  readonly models: readonly {
    readonly provider: string;
    readonly model: string;
    readonly calls: number;
    readonly failed: number;
    readonly avgLatencyMs: number | null;
    readonly p50LatencyMs: number | null;
    readonly p95LatencyMs: number | null;
  }[];
  readonly tokensByClass: {
    readonly uncachedInput: number;
    readonly cachedInput: number;
    readonly cacheWrite: number;
    readonly output: number;
    readonly reasoning: number;
  };
  readonly tools: readonly { readonly tool: string; readonly calls: number; readonly failed: number }[];
}

export interface ObservabilityReadModel {
  summary(principal: Principal): Promise<ObservabilitySummary>;
}
