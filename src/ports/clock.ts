/** Injected time. The runtime and domain never call `Date.now()` or `new Date()` themselves. */
export interface Clock {
  /** Current instant, epoch milliseconds (UTC). */
  nowMs(): number;
  /** Current instant as an ISO-8601 UTC string. */
  nowIso(): string;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Injected identity: UUIDs for externally visible ids, plus a source of jitter for backoff. */
export interface IdFactory {
  uuid(): string;
  /** A uniformly distributed number in [0, 1) used for retry jitter. */
  random(): number;
}
