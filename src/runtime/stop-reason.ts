/** Why the run loop's abort signal fired. */
/**
 * `abandon` simulates a crash for the deterministic eval harness: the loop stops writing at once,
 * releases nothing and leaves its lease to expire, exactly as a killed process would.
 */
export type StopReason = 'shutdown' | 'fenced' | 'cancelled' | 'abandon';

export class LoopStopped extends Error {
  constructor(readonly reason: StopReason) {
    super(`run loop stopped: ${reason}`);
  }
}

export function stopReasonOf(signal: AbortSignal): StopReason | null {
  if (!signal.aborted) return null;
  const r: unknown = signal.reason;
  return r instanceof LoopStopped ? r.reason : 'shutdown';
}
