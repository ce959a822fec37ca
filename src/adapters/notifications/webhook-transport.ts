import { createHmac } from 'node:crypto';
import type { DeliveryOutcome, NotificationTransport, OutboundNotification } from '../../ports/notification-delivery';
import { checkWebhookUrl } from './webhook-url';

/** A webhook endpoint as the transport needs it. */
export interface WebhookTarget {
  readonly url: string;
  readonly secret: string;
}

/** The signature header value for `body` at `t` (unix seconds): `t=<t>,v1=<hex HMAC-SHA256("<t>.<body>")>`. */
export function signatureHeader(secret: string, t: number, body: string): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/** The documented webhook body (docs/notifications.md): snake_case, `content` only when allowed. */
export function webhookBody(n: OutboundNotification): string {
  return JSON.stringify({
    delivery_id: n.deliveryId,
    kind: n.kind,
    notification_id: n.notificationId,
    session_id: n.sessionId,
    run_id: n.runId,
    created_at: n.createdAt,
    attempt: n.attempt,
    summary: n.summary,
    links: n.links,
    ...(n.content ? { content: n.content } : {}),
  });
}

/**
 * The webhook transport (ADR 0036): a signed JSON POST, `X-Agent-Delivery` and `X-Agent-Signature`
 * headers, no redirects followed, the URL re-checked against private addresses before every
 * attempt (DNS may have changed since registration). Any non-2xx answer or network error fails the
 * attempt.
 */
export class WebhookTransport implements NotificationTransport<WebhookTarget> {
  readonly channel = 'webhook';

  constructor(private readonly timeoutMs = 10_000) {}

  async deliver(target: WebhookTarget, n: OutboundNotification): Promise<DeliveryOutcome> {
    const body = webhookBody(n);
    try {
      await checkWebhookUrl(target.url);
      const res = await fetch(target.url, {
        method: 'POST',
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'x-agent-delivery': n.deliveryId,
          'x-agent-signature': signatureHeader(target.secret, Math.floor(Date.now() / 1000), body),
        },
      });
      await res.arrayBuffer().catch(() => undefined);
      return { status: res.status, error: res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}` };
    } catch (e) {
      return { status: null, error: e instanceof Error ? e.message : String(e) };
    }
  }
}
