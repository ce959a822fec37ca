/** A committed append: events `from..to` (session sequences) of one session are now readable. */
export interface AppendNotice {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly runIds: readonly string[];
  readonly from: number;
  readonly to: number;
}

/** A transient text or reasoning delta: delivered live only, never persisted. */
export interface TransientNotice {
  readonly sessionId: string;
  readonly runId: string;
  readonly kind: 'text_delta' | 'reasoning_delta';
  readonly text: string;
}

export interface FeedListener {
  appended(notice: AppendNotice): void;
  transient(notice: TransientNotice): void;
  /** The feed lost and regained its connection: notices may have been missed, re-read the log. */
  resynchronize(): void;
}

export interface FeedSubscription {
  close(): void;
}

/**
 * Live notices of committed events (ADR 0011). One connection per process fans out to
 * every listener. A notice only nudges: the event log stays the source of truth.
 */
export interface EventFeed {
  /** Resolves once the feed is listening, so an append committed after this call is never missed. */
  subscribe(sessionId: string, listener: FeedListener): Promise<FeedSubscription>;
  close(): Promise<void>;
}
