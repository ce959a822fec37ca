/** A committed append: events `from..to` (session sequences) of one session are now readable. */
export interface AppendNotice {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly runIds: readonly string[];
  readonly from: number;
  readonly to: number;
}

/**
 * A transient text or reasoning delta, or a tool call's progress (ADR 0048): delivered live only,
 * never persisted. For `tool.call.progress`, `text` is the progress message ('' for none).
 */
export interface TransientNotice {
  readonly sessionId: string;
  readonly runId: string;
  readonly kind: 'text_delta' | 'reasoning_delta' | 'tool.call.progress';
  readonly text: string;
  /** `tool.call.progress` only. */
  readonly progress?: {
    readonly invocationId: string;
    readonly toolName: string;
    readonly progress: number;
    readonly total: number | null;
  };
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

/** New notification rows committed (ADR 0036): whose they are, not what they say. */
export interface NotificationNotice {
  readonly tenantId: string;
  readonly sessionId: string;
  /** Recipients; null stands for the session's owner. */
  readonly principalIds: readonly (string | null)[];
}

export interface NotificationFeedListener {
  notified(notice: NotificationNotice): void;
  /** Notices may have been missed: re-read the notifications. */
  resynchronize(): void;
}

/**
 * Live notices of committed notifications (the append statement's `agent_notifications` NOTIFY).
 * A notice only nudges: the `notifications` rows stay the source of truth.
 */
export interface NotificationFeed {
  /** Resolves once the feed is listening, so a notification committed after this call is never missed. */
  subscribeNotifications(listener: NotificationFeedListener): Promise<FeedSubscription>;
}
