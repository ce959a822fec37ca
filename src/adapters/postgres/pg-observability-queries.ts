import type { Principal } from '../../domain/principal';
import type { ObservabilityReadModel, ObservabilitySummary } from '../../ports/observability';
import type { Database } from './database';

/** Aggregates for the dashboard's metrics panel over the principal's own runs. */
export class PgObservabilityQueries implements ObservabilityReadModel {
  constructor(private readonly db: Database) {}

  async summary(principal: Principal): Promise<ObservabilitySummary> {
    const scope = [principal.tenantId, principal.principalId];
    const [runs, models, tools] = await Promise.all([
      this.db.query<{ status: string; n: string }>(
        `SELECT status, count(*)::text AS n FROM runs WHERE tenant_id = $1 AND principal_id = $2 GROUP BY status`,
        scope,
      ),
      this.db.query<{
        provider: string;
        model: string;
        calls: string;
        failed: string;
        avg_ms: number | null;
        p50_ms: number | null;
        p95_ms: number | null;
        uncached: string;
        cached: string;
        cache_write: string;
        output: string;
        reasoning: string;
      }>(
        `SELECT m.provider, m.model, count(*)::text AS calls,
                count(*) FILTER (WHERE m.status = 'failed')::text AS failed,
                avg(m.latency_ms) FILTER (WHERE m.status = 'succeeded')::float8 AS avg_ms,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY m.latency_ms) FILTER (WHERE m.status = 'succeeded') AS p50_ms,
                percentile_cont(0.95) WITHIN GROUP (ORDER BY m.latency_ms) FILTER (WHERE m.status = 'succeeded') AS p95_ms,
                sum(m.uncached_input_tokens)::text AS uncached, sum(m.cached_input_tokens)::text AS cached,
                sum(m.cache_write_tokens)::text AS cache_write, sum(m.output_tokens)::text AS output,
                sum(m.reasoning_tokens)::text AS reasoning
           FROM model_calls m JOIN runs r ON r.id = m.run_id
          WHERE r.tenant_id = $1 AND r.principal_id = $2
          GROUP BY m.provider, m.model ORDER BY count(*) DESC, m.provider, m.model`,
        scope,
      ),
      this.db.query<{ tool: string; calls: string; failed: string }>(
        `SELECT t.tool_name AS tool, count(*)::text AS calls,
                count(*) FILTER (WHERE t.status IN ('failed', 'uncertain'))::text AS failed
           FROM tool_invocations t JOIN runs r ON r.id = t.run_id
          WHERE r.tenant_id = $1 AND r.principal_id = $2
          GROUP BY t.tool_name ORDER BY count(*) FILTER (WHERE t.status IN ('failed', 'uncertain')) DESC, t.tool_name`,
        scope,
      ),
    ]);
    const num = (v: string | number | null) => (v === null ? 0 : Number(v));
    const ms = (v: number | null) => (v === null ? null : Math.round(Number(v)));
    const tokensByClass = { uncachedInput: 0, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 };
    for (const m of models.rows) {
      tokensByClass.uncachedInput += num(m.uncached);
      tokensByClass.cachedInput += num(m.cached);
      tokensByClass.cacheWrite += num(m.cache_write);
      tokensByClass.output += num(m.output);
      tokensByClass.reasoning += num(m.reasoning);
    }
    return {
      runsByStatus: Object.fromEntries(runs.rows.map((r) => [r.status, num(r.n)])),
      models: models.rows.map((m) => ({
        provider: m.provider,
        model: m.model,
        calls: num(m.calls),
        failed: num(m.failed),
        avgLatencyMs: ms(m.avg_ms),
        p50LatencyMs: ms(m.p50_ms),
        p95LatencyMs: ms(m.p95_ms),
      })),
      tokensByClass,
      tools: tools.rows.map((t) => ({ tool: t.tool, calls: num(t.calls), failed: num(t.failed) })),
    };
  }
}
