/**
 * Fallback models (issue 33 item 4, ADR 0046): which model failures let a run continue on the next
 * model of its policy's `fallbacks`, and when. Pure; the run loop applies the decision.
 */

export const FALLBACK_REASONS = ['rate_limited', 'quota_exceeded', 'overloaded'] as const;
export type FallbackReason = (typeof FALLBACK_REASONS)[number];

/** Recorded on `model.request.started` (v4) of every call made on a fallback: the model it replaced. */
export interface ModelFallbackFrom {
  readonly provider: string;
  readonly model: string;
  readonly reason: FallbackReason;
}

const RATE_LIMIT_CODES = new Set(['rate_limit_error', 'rate_limit_exceeded', 'rate_limited', 'too_many_requests']);
const OVERLOADED_CODES = new Set(['overloaded_error', 'overloaded', 'service_unavailable', 'server_overloaded']);
const QUOTA = /quota|resource_exhausted|billing_hard_limit|insufficient_balance/i;

/**
 * The fallback reason of a failed model call, from the details the assembler puts on its error
 * (`httpStatus`, `providerCode`), or null when the failure is of another kind (a bad request, a
 * protocol violation, a dropped connection): those never switch models.
 */
export function fallbackReasonOf(
  details: { httpStatus?: unknown; providerCode?: unknown } | undefined,
): FallbackReason | null {
  if (!details) return null;
  const code = typeof details.providerCode === 'string' ? details.providerCode : '';
  const status = typeof details.httpStatus === 'number' ? details.httpStatus : null;
  if (QUOTA.test(code)) return 'quota_exceeded';
  if (OVERLOADED_CODES.has(code) || status === 529 || status === 503) return 'overloaded';
  if (RATE_LIMIT_CODES.has(code) || status === 429) return 'rate_limited';
  return null;
}

export interface FailedAttempt {
  /** Why the failure would move the run to a fallback, or null when it never would. */
  readonly reason: FallbackReason | null;
  /** The run loop's classification: transient and protocol failures are retried. */
  readonly retryable: boolean;
  /** Attempts made on the current model in this step, this one included. */
  readonly attemptsOnModel: number;
  readonly maxAttempts: number;
  /** Whether waiting for the next attempt (backoff, retry-after) still ends before the run's deadline. */
  readonly waitFitsDeadline: boolean;
  /** Whether the deadline has passed already. */
  readonly pastDeadline: boolean;
  /** Whether the policy names another model after the current one. */
  readonly hasFallback: boolean;
}

/**
 * After a failed attempt: `retry` the same model (its retry budget and the deadline allow), `fall_back`
 * to the next model (a rate-limit, quota or overloaded failure whose retry budget is spent, or whose
 * retry-after would overrun the deadline), or `fail` the run.
 */
export function afterFailedAttempt(f: FailedAttempt): 'retry' | 'fall_back' | 'fail' {
  const budgetLeft = f.attemptsOnModel < f.maxAttempts;
  if (f.retryable && budgetLeft && f.waitFitsDeadline) return 'retry';
  if (f.reason !== null && f.hasFallback && !f.pastDeadline) return 'fall_back';
  return 'fail';
}
