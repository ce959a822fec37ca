/**
 * When a failed webhook delivery is tried again (ADR 0036): exponential backoff from `baseMs`,
 * capped at an hour, with "equal jitter" (half fixed, half random) so receivers that fail together
 * are not retried together; a retry that would fall more than DELIVERY_GIVE_UP_MS after the
 * delivery's creation is not made: the delivery is dead-lettered.
 */
export const DELIVERY_GIVE_UP_MS = 24 * 60 * 60 * 1000;
const MAX_DELAY_MS = 60 * 60 * 1000;

/** Delay before attempt `failedAttempts + 1`; `random` in [0, 1). */
export function retryDelayMs(failedAttempts: number, random: number, baseMs: number): number {
  const exp = Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.max(0, failedAttempts - 1));
  return Math.round(exp / 2 + (exp / 2) * random);
}
