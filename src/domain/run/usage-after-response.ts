import type { NewEvent, StoredEvent } from '../events/payloads';
import { runProjection } from '../projections/run-projection';
import type { RunRecord } from './run';
import type { RunUsage } from './usage';

/**
 * The run's usage after a `model.response.completed` with `data`, computed by the run projection
 * itself (so it can never drift from what the append will store), for deciding on budgets before
 * the response is written.
 */
export function usageAfterResponse(
  run: RunRecord,
  data: NewEvent<'model.response.completed'>['data'],
  nowIso: string,
): RunUsage {
  // The projection folds stored events; this one is not stored yet (no id, no sequence).
  const unstored = {
    id: 0,
    sessionId: run.sessionId,
    runId: run.id,
    sequence: 0,
    type: 'model.response.completed',
    schemaVersion: 1,
    data,
    actorType: 'worker',
    actorId: null,
    tenantId: run.tenantId,
    traceId: null,
    createdAt: nowIso,
  } as StoredEvent<'model.response.completed'>;
  const next = runProjection.evolve({ usage: run.usage }, unstored);
  return (next?.usage ?? run.usage) as RunUsage;
}
