import { randomBytes, randomUUID } from 'node:crypto';
import { ValidationError } from '../../../domain/errors';
import { NOTIFICATION_KINDS } from '../../../domain/notifications/triggers';
import type { Principal } from '../../../domain/principal';
import type { WebhookRecord, WebhookRegistry } from '../../../ports/notifications';
import type { Database } from '../database';
import { getOwned, listOwned, removeOwned } from './owned-rows';
import { isoOf } from '../keyset-cursor';
import { checkWebhookUrl } from '../../notifications';

const toRecord = (r: Record<string, unknown>): WebhookRecord => ({
  id: String(r.id),
  url: String(r.url),
  kinds: r.kinds as string[],
  createdAt: isoOf(r.created_at),
});

/** The `webhooks` table: configuration, not events (like API tokens); the secret never leaves but once. */
export class PgWebhooks implements WebhookRegistry {
  constructor(private readonly db: Database) {}

  async register(principal: Principal, url: string, kinds: readonly string[]) {
    const unknown = kinds.filter((k) => !(NOTIFICATION_KINDS as readonly string[]).includes(k));
    if (kinds.length === 0 || unknown.length > 0)
      throw new ValidationError(`kinds must name at least one of: ${NOTIFICATION_KINDS.join(', ')}`, {
        field: 'kinds',
        unknown,
      });
    const checked = await checkWebhookUrl(url);
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    const r = await this.db.query(
      `INSERT INTO webhooks (id, tenant_id, principal_id, url, kinds, secret) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
      [randomUUID(), principal.tenantId, principal.principalId, checked.toString(), [...new Set(kinds)], secret],
    );
    return { ...toRecord(r.rows[0]), secret };
  }

  async list(principal: Principal): Promise<WebhookRecord[]> {
    return (await listOwned(this.db, 'webhooks', principal)).map(toRecord);
  }

  async get(principal: Principal, id: string): Promise<WebhookRecord | null> {
    const row = await getOwned(this.db, 'webhooks', principal, id);
    return row ? toRecord(row) : null;
  }

  remove(principal: Principal, id: string): Promise<boolean> {
    return removeOwned(this.db, 'webhooks', principal, id);
  }
}
