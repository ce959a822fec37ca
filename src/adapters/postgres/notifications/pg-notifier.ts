import { DELIVERY_GIVE_UP_MS, retryDelayMs } from '../../../domain/notifications/delivery-schedule';
import type { Logger } from '../../../ports/logger';
import type { Database } from '../database';
import { isoOf } from '../keyset-cursor';
import { quietUntil } from '../../notifications';
import { channelSql, contentSql } from './notification-content';
import type { NotificationTransport } from '../../../ports/notification-delivery';
import { WebhookTransport, type WebhookTarget } from '../../notifications';

export interface NotifierOptions {
  /** Notifications fanned out and deliveries claimed per pass. */
  readonly batch?: number;
  /** First retry delay; doubles per failed attempt (with jitter). */
  readonly retryBaseMs?: number;
  /** How long a claimed delivery stays invisible to other notifiers (a crashed one's claim lapses). */
  readonly claimMs?: number;
  readonly timeoutMs?: number;
  /** The time quiet hours are judged at (epoch ms); default the system clock. */
  readonly nowMs?: () => number;
  /** The transport behind the delivery port (default: the signed webhook POST). */
  readonly transport?: NotificationTransport<WebhookTarget>;
}

export { signatureHeader } from '../../notifications';

interface Claimed {
  id: string;
  attempts: number;
  url: string;
  secret: string;
  notification_id: string;
  kind: string;
  session_id: string;
  run_id: string | null;
  summary: Record<string, unknown>;
  links: Record<string, string>;
  created_at: unknown;
  /** Only for a recipient whose preference is `content: full`. */
  content: Record<string, unknown> | null;
}

/**
 * The webhook delivery worker (ADR 0036). Each pass: fans new notifications out into one
 * `notification_deliveries` row per matching endpoint (marking them dispatched, in one statement),
 * then claims due deliveries with SKIP LOCKED, pushing their next attempt past a claim period first,
 * so a notifier killed mid-delivery loses nothing: its claims lapse and another notifier retries
 * them (at-least-once; the receiver dedupes by `delivery_id`). Every attempt is logged.
 */
export class PgNotifier {
  private readonly batch: number;
  private readonly retryBaseMs: number;
  private readonly claimMs: number;
  private readonly nowMs: () => number;
  private readonly transport: NotificationTransport<WebhookTarget>;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    o: NotifierOptions = {},
  ) {
    this.batch = o.batch ?? 100;
    this.retryBaseMs = o.retryBaseMs ?? 1000;
    this.claimMs = o.claimMs ?? 60_000;
    this.nowMs = o.nowMs ?? Date.now;
    this.transport = o.transport ?? new WebhookTransport(o.timeoutMs ?? 10_000);
  }

  /** One pass; returns how many deliveries it attempted. */
  async runOnce(): Promise<number> {
    await this.fanOut();
    await this.deferQuietHours();
    const claimed = await this.claim();
    await Promise.all(claimed.map((d) => this.deliver(d)));
    return claimed.length;
  }

  private async fanOut(): Promise<void> {
    await this.db.query(
      `WITH due AS (
         SELECT n.id, n.tenant_id, n.kind, COALESCE(n.principal_id, s.principal_id) AS principal_id
           FROM notifications n LEFT JOIN sessions s ON s.id = n.session_id
          WHERE n.dispatched_at IS NULL ORDER BY n.created_at LIMIT $1 FOR UPDATE OF n SKIP LOCKED
       ), ins AS (
         INSERT INTO notification_deliveries (id, notification_id, webhook_id, tenant_id)
         SELECT gen_random_uuid(), d.id, w.id, d.tenant_id FROM due d JOIN webhooks w
             ON w.tenant_id = d.tenant_id AND w.principal_id = d.principal_id AND d.kind = ANY (w.kinds)
           LEFT JOIN notification_preferences p ON p.tenant_id = d.tenant_id AND p.principal_id = d.principal_id
          WHERE ${channelSql('p', 'd.kind')} IN ('webhook', 'both')
         ON CONFLICT (notification_id, webhook_id) DO NOTHING
       )
       UPDATE notifications SET dispatched_at = now() WHERE id IN (SELECT id FROM due)`,
      [this.batch],
    );
  }

  /**
   * Quiet hours (issue 31 item 4): a pending delivery to a principal whose local time is inside its
   * quiet hours waits until they end (the inbox is not delayed). Judged here, before each claim, so
   * first attempts and retries alike wait; moving a delivery is not an attempt.
   */
  private async deferQuietHours(): Promise<void> {
    const quiet = await this.db.query<{ tenant_id: string; principal_id: string; s: string; e: string; z: string }>(
      `SELECT tenant_id, principal_id, quiet_start AS s, quiet_end AS e, quiet_zone AS z
         FROM notification_preferences WHERE quiet_zone IS NOT NULL`,
    );
    const now = new Date(this.nowMs());
    const waiting = quiet.rows
      .map((r) => ({ r, until: quietUntil({ start: r.s, end: r.e, zone: r.z }, now) }))
      .filter((q): q is { r: (typeof quiet.rows)[number]; until: Date } => q.until !== null);
    if (waiting.length === 0) return;
    await this.db.query(
      `UPDATE notification_deliveries d SET next_attempt_at = q.until
         FROM webhooks w, unnest($1::text[], $2::text[], $3::timestamptz[]) AS q(t, p, until)
        WHERE d.webhook_id = w.id AND w.tenant_id = q.t AND w.principal_id = q.p
          AND d.status = 'pending' AND d.next_attempt_at < q.until`,
      [
        waiting.map((q) => q.r.tenant_id),
        waiting.map((q) => q.r.principal_id),
        waiting.map((q) => q.until.toISOString()),
      ],
    );
  }

  private async claim(): Promise<Claimed[]> {
    const r = await this.db.query<Claimed>(
      `WITH c AS (
         UPDATE notification_deliveries d
            SET attempts = d.attempts + 1, next_attempt_at = now() + ($2::int * interval '1 millisecond')
          WHERE d.id IN (SELECT id FROM notification_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
                          ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
          RETURNING d.id, d.attempts, d.notification_id, d.webhook_id)
       SELECT c.id, c.attempts, w.url, w.secret, n.id AS notification_id, n.kind, n.session_id, n.run_id,
              n.summary, n.links, n.created_at, CASE WHEN p.content = 'full' THEN ${contentSql('n')} END AS content
         FROM c JOIN webhooks w ON w.id = c.webhook_id JOIN notifications n ON n.id = c.notification_id
         LEFT JOIN notification_preferences p ON p.tenant_id = w.tenant_id AND p.principal_id = w.principal_id`,
      [this.batch, this.claimMs],
    );
    return r.rows;
  }

  private async deliver(d: Claimed): Promise<void> {
    // Content-free by default: the summary and links; `content` only when the recipient chose `full`.
    const outcome = await this.transport.deliver(
      { url: d.url, secret: d.secret },
      {
        deliveryId: d.id,
        attempt: d.attempts,
        notificationId: d.notification_id,
        kind: d.kind,
        sessionId: d.session_id,
        runId: d.run_id,
        createdAt: isoOf(d.created_at),
        summary: d.summary,
        links: d.links,
        content: d.content,
      },
    );
    await this.record(d, outcome.status, outcome.error);
  }

  private async record(d: Claimed, status: number | null, error: string | null): Promise<void> {
    const ok = error === null;
    const delay = retryDelayMs(d.attempts, Math.random(), this.retryBaseMs);
    await this.db.query(
      `WITH a AS (INSERT INTO notification_delivery_attempts (delivery_id, attempt, outcome, status_code, error)
                  VALUES ($1, $2, $3, $4, $5))
       UPDATE notification_deliveries SET last_status = $4, last_error = $5,
              status = CASE WHEN $6 THEN 'succeeded'
                            WHEN now() + ($7::int * interval '1 millisecond') - created_at > ($8::bigint * interval '1 millisecond') THEN 'dead'
                            ELSE 'pending' END,
              delivered_at = CASE WHEN $6 THEN now() END,
              next_attempt_at = now() + ($7::int * interval '1 millisecond')
        WHERE id = $1`,
      [d.id, d.attempts, ok ? 'delivery.succeeded' : 'delivery.failed', status, error, ok, delay, DELIVERY_GIVE_UP_MS],
    );
    if (!ok) this.log.warn('webhook delivery failed', { deliveryId: d.id, attempt: d.attempts, status, error });
  }
}
