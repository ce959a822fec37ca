/**
 * The notification delivery port (issue 31 item 5, ADR 0036): what the notifier hands a transport
 * for one attempt of one delivery, and what it needs back. Transport-neutral: the webhook adapter
 * implements it today; a push transport (APNs, Web Push, to a registered device) is one more
 * adapter behind the same port, later.
 */

/** One attempt of one delivery, content-free unless the recipient's preference is `content: full`. */
export interface OutboundNotification {
  /** The same on every attempt: receivers dedupe on it (delivery is at-least-once). */
  readonly deliveryId: string;
  readonly attempt: number;
  readonly notificationId: string;
  readonly kind: string;
  readonly sessionId: string;
  readonly runId: string | null;
  readonly createdAt: string;
  readonly summary: Record<string, unknown>;
  readonly links: Record<string, string>;
  readonly content?: Record<string, unknown> | null;
}

/** How one attempt went: a 2xx-like success has `error: null`; `status` is the transport's code, if any. */
export interface DeliveryOutcome {
  readonly status: number | null;
  readonly error: string | null;
}

/**
 * One transport. `Target` is where it delivers (a webhook endpoint and its secret; later a device
 * and its push subscription). It never throws for a failed attempt: the outcome says so, and the
 * notifier records it and schedules the retry.
 */
export interface NotificationTransport<Target> {
  /** The channel name recorded with attempts (`webhook`; later `apns`, `webpush`). */
  readonly channel: string;
  deliver(target: Target, notification: OutboundNotification): Promise<DeliveryOutcome>;
}
