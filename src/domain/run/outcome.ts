import type { FailureReason } from './failure';

/**
 * How a run ends (plan §27.2): the one terminal write of the run loop records exactly one of these.
 * Pure data; the run loop's finish step turns it into `run.completed` / `run.failed` / `run.cancelled`.
 */
export type RunOutcome =
  | { readonly kind: 'completed'; readonly text: string }
  | {
      readonly kind: 'failed';
      readonly reason: FailureReason;
      readonly message: string;
      readonly errorCode: string | null;
    }
  | { readonly kind: 'cancelled'; readonly reason: string | null };

export type RunFailedOutcome = Extract<RunOutcome, { kind: 'failed' }>;

/** The outcome of a run whose cancel was requested (by the API's cancel command or the heartbeat). */
export const CANCEL_REQUESTED: RunOutcome = { kind: 'cancelled', reason: 'cancel requested' };

export function failedWith(reason: FailureReason, message: string, errorCode: string | null): RunFailedOutcome {
  return { kind: 'failed', reason, message, errorCode };
}
