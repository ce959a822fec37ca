import type { NewEvent } from '../events/payloads';
import type { RunRecord } from './run';
import { addResponseUsage, type RunUsage } from './usage';

/**
 * The run's usage after a `model.response.completed` with `data`, by the same addition the run
 * projection applies when that event is stored (so it can never drift from what the append will
 * store), for deciding on budgets before the response is written.
 */
export function usageAfterResponse(run: RunRecord, data: NewEvent<'model.response.completed'>['data']): RunUsage {
  return addResponseUsage(run.usage, data);
}
