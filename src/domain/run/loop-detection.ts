import { failedWith, type RunFailedOutcome } from './outcome';

/** How many identical calls with identical results a run may make before it is stopped as a loop. */
export const LOOP_THRESHOLD = 3;

/** What loop detection needs of a prior invocation of the same tool with the same arguments. */
export interface PriorCall {
  readonly status: string;
  readonly result: unknown;
}

/**
 * Whether a new call repeats one the run already made `threshold` times with the same answer each
 * time: the model is asking again without new evidence (plan §6.5). Only succeeded calls count;
 * a different result in between is new evidence.
 */
export function repeatsWithoutNewEvidence(prior: readonly PriorCall[], threshold = LOOP_THRESHOLD): boolean {
  const answered = prior.filter((p) => p.status === 'succeeded');
  if (answered.length < threshold) return false;
  const first = JSON.stringify(answered[0].result);
  return answered.every((p) => JSON.stringify(p.result) === first);
}

export function loopDetected(toolName: string): RunFailedOutcome {
  return failedWith(
    'loop_detected',
    `the model repeated the identical call ${toolName} without new evidence`,
    'loop_detected',
  );
}
