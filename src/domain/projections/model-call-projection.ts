import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';

/**
 * model_calls: one row per model attempt with all five token classes, cost and its source, and
 * (v2) the provider profile name and version and the registry version that routed it.
 */
export const modelCallProjection: Projection = {
  name: 'model_calls',
  table: 'model_calls',
  version: 2,
  keyColumn: 'id',
  columns: [
    'id',
    'run_id',
    'session_id',
    'tenant_id',
    'step_number',
    'attempt_number',
    'provider',
    'model',
    'profile_name',
    'profile_version',
    'registry_version',
    'status',
    'prefix_hash',
    'uncached_input_tokens',
    'cached_input_tokens',
    'cache_write_tokens',
    'output_tokens',
    'reasoning_tokens',
    'cost',
    'cost_source',
    'stop_reason',
    'latency_ms',
    'error',
    'trace_id',
    'started_at',
    'completed_at',
  ],
  keyOf: (e) => (e.type.startsWith('model.') ? (e.data as { modelCallId: string }).modelCallId : null),
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'model.request.started') {
      return {
        id: e.data.modelCallId,
        run_id: e.runId,
        session_id: e.sessionId,
        tenant_id: e.tenantId,
        step_number: e.data.step,
        attempt_number: e.data.attempt,
        provider: e.data.provider,
        model: e.data.model,
        profile_name: e.data.profileName,
        profile_version: e.data.profileVersion,
        registry_version: e.data.registryVersion,
        status: 'started',
        prefix_hash: e.data.prefixHash,
        uncached_input_tokens: 0,
        cached_input_tokens: 0,
        cache_write_tokens: 0,
        output_tokens: 0,
        reasoning_tokens: 0,
        cost: '0',
        cost_source: null,
        stop_reason: null,
        latency_ms: null,
        error: null,
        trace_id: e.traceId,
        started_at: e.createdAt,
        completed_at: null,
      };
    }
    if (!row) return undefined;
    switch (e.type) {
      case 'model.response.completed':
        return {
          ...row,
          status: 'succeeded',
          uncached_input_tokens: e.data.usage.uncachedInputTokens,
          cached_input_tokens: e.data.usage.cachedInputTokens,
          cache_write_tokens: e.data.usage.cacheWriteTokens,
          output_tokens: e.data.usage.outputTokens,
          reasoning_tokens: e.data.usage.reasoningTokens,
          cost: e.data.cost,
          cost_source: e.data.costSource,
          stop_reason: e.data.stopReason,
          latency_ms: e.data.latencyMs,
          completed_at: e.createdAt,
        };
      case 'model.request.failed':
        return {
          ...row,
          status: 'failed',
          error: { code: e.data.errorCode, message: e.data.message, retryable: e.data.retryable },
          latency_ms: e.data.latencyMs,
          completed_at: e.createdAt,
        };
      default:
        return row;
    }
  },
};
