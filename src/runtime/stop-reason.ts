/** Why the run loop's abort signal fired. */
export type StopReason = 'shutdown' | 'fenced' | 'cancelled';

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
