import type { PostedNotification } from '../domain/deciders/notification';
import type { NotificationPreferences } from '../domain/notifications/preferences';
import type { Principal } from '../domain/principal';
import type { Page } from './read-models';

/** One notification as the inbox shows it (ADR 0036): content-free unless a preference allows more. */
export interface NotificationRecord {
  readonly id: string;
  readonly kind: string;
  readonly dedupeKey: string;
  readonly sessionId: string;
  readonly runId: string | null;
  readonly subjectId: string;
  readonly summary: Record<string, unknown>;
  readonly links: Record<string, string>;
  readonly createdAt: string;
  readonly readAt: string | null;
  /**
   * What the notification is about (the action summary and arguments, the question, the failure
   * message), only when the recipient's preference is `content: full`; read from the source rows.
   */
  readonly content?: Record<string, unknown> | null;
}

/**
 * A position in the notification stream (ADR 0036): the writing transaction and the row's position,
 * compared in that order; on the wire `<transactionId>-<position>` (the SSE `id:`).
 */
export interface StreamPosition {
  readonly transactionId: string;
  readonly position: string;
}

export const streamIdOf = (p: StreamPosition): string => `${p.transactionId}-${p.position}`;

/** A notification with its stream position. */
export interface StreamedNotification extends NotificationRecord {
  readonly at: StreamPosition;
}

/**
 * The inbox: the `notifications` projection as one principal sees it. A notification is the
 * principal's when it names the principal, or names no one and is about a session the principal
 * owns, in the principal's tenant; anything else is "not found".
 */
export interface NotificationInbox {
  /** Unread first, then newest first. */
  list(principal: Principal, limit: number, cursor: string | null): Promise<Page<NotificationRecord>>;
  /**
   * Unread and total counts by kind, and the stream position they were taken at: a stream opened
   * with it as Last-Event-ID misses nothing committed since.
   */
  summary(principal: Principal): Promise<{
    unread: number;
    byKind: Record<string, { unread: number; total: number }>;
    streamId: string;
  }>;
  /**
   * The principal's notifications after `after` (null: from the start) in stream order, only those
   * whose transaction is behind every running one (a late commit is never skipped); `held` says
   * more are committed or committing behind the horizon (read again shortly).
   */
  streamAfter(
    principal: Principal,
    after: StreamPosition | null,
    limit: number,
  ): Promise<{ items: StreamedNotification[]; held: boolean }>;
  /** Marks one read (idempotent); null when it is not the principal's. */
  markRead(principal: Principal, id: string): Promise<NotificationRecord | null>;
  /** Marks every unread notification of the principal read; returns how many it marked. */
  markAllRead(principal: Principal): Promise<number>;
  /** Marks read the principal's notifications about one subject (an approval answered inline). */
  markSubjectRead(principal: Principal, subjectId: string): Promise<number>;
  /** What an external producer posted in a stream of the tenant (its notification's fields), or null. */
  findPosted(tenantId: string, streamId: string): Promise<PostedNotification | null>;
  /** The notification posted in a stream of the tenant, as the inbox shows it (for the producer), or null. */
  getPosted(tenantId: string, streamId: string): Promise<(NotificationRecord & { principalId: string }) | null>;
}

/** A registered webhook endpoint; the secret is returned once, at registration. */
export interface WebhookRecord {
  readonly id: string;
  readonly url: string;
  readonly kinds: readonly string[];
  readonly createdAt: string;
}

/** Webhook endpoints of a principal (ADR 0036); another principal's endpoint is not found. */
export interface WebhookRegistry {
  /** Validates the URL (scheme, private addresses) and stores the endpoint with a new secret. */
  register(principal: Principal, url: string, kinds: readonly string[]): Promise<WebhookRecord & { secret: string }>;
  list(principal: Principal): Promise<WebhookRecord[]>;
  get(principal: Principal, id: string): Promise<WebhookRecord | null>;
  /** True when it removed the endpoint (and its pending deliveries). */
  remove(principal: Principal, id: string): Promise<boolean>;
}

/**
 * A principal's notification preferences (issue 31 item 4): per kind inbox, webhook, both or none;
 * content-free or full; quiet hours in an IANA zone that delay webhook deliveries.
 */
export interface NotificationPreferenceStore {
  /** The principal's preferences (the defaults when it never set any). */
  get(principal: Principal): Promise<NotificationPreferences>;
  /**
   * Replaces them from the wire shape `{kinds?, content?, quiet_hours?}`; a ValidationError (unknown
   * kind or channel, malformed time, unknown zone) stores nothing.
   */
  put(principal: Principal, raw: unknown): Promise<NotificationPreferences>;
}
