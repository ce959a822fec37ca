import { ApiSuccess } from './openapi';
import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Principal } from '../domain/principal';
import type { ObservabilityReadModel } from '../ports/observability';
import { Auth, RequireScope } from './auth/decorators';

export const OBSERVABILITY_READ_MODEL = Symbol('ObservabilityReadModel');
export const OBSERVABILITY_SETTINGS = Symbol('ObservabilitySettings');

export interface ObservabilitySettings {
  /** OTEL_TRACE_UI_URL: a trace viewer URL with `{trace_id}`, e.g. http://localhost:16686/trace/{trace_id}. */
  readonly traceUiUrl: string | null;
  /** Whether this API process exports spans (OTEL_EXPORTER_OTLP_ENDPOINT set). */
  readonly tracingEnabled: boolean;
}

/** The dashboard's observability views: the trace link template and the metrics panel (plan §19). */
@ApiTags('observability')
@Controller('v1/observability')
export class ObservabilityController {
  constructor(
    @Inject(OBSERVABILITY_READ_MODEL) private readonly reads: ObservabilityReadModel,
    @Inject(OBSERVABILITY_SETTINGS) private readonly settings: ObservabilitySettings,
  ) {}

  @Get()
  @RequireScope('runs.read')
  @ApiOperation({ summary: 'Tracing configuration for clients: the trace viewer URL template, if any' })
  @ApiSuccess(200, '{trace_ui_url, tracing_enabled}')
  config() {
    return { trace_ui_url: this.settings.traceUiUrl, tracing_enabled: this.settings.tracingEnabled };
  }

  @Get('summary')
  @RequireScope('runs.read')
  @ApiOperation({
    summary:
      "The metrics panel over the caller's own runs: runs by status, model latency, tokens by class, tool failures",
  })
  @ApiSuccess(200, 'runs_by_status, models, tokens_by_class, tools')
  async summary(@Auth() principal: Principal) {
    const s = await this.reads.summary(principal);
    return {
      runs_by_status: s.runsByStatus,
      models: s.models.map((m) => ({
        provider: m.provider,
        model: m.model,
        calls: m.calls,
        failed: m.failed,
        avg_latency_ms: m.avgLatencyMs,
        p50_latency_ms: m.p50LatencyMs,
        p95_latency_ms: m.p95LatencyMs,
      })),
      tokens_by_class: {
        uncached_input: s.tokensByClass.uncachedInput,
        cached_input: s.tokensByClass.cachedInput,
        cache_write: s.tokensByClass.cacheWrite,
        output: s.tokensByClass.output,
        reasoning: s.tokensByClass.reasoning,
      },
      tools: s.tools,
    };
  }
}
