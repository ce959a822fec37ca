import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 31 item 4: per principal, per kind, where notifications go (inbox, webhook, both, none),
 * whether they may carry content, and quiet hours in the principal's IANA zone that delay webhook
 * deliveries. Configuration (like webhooks and API tokens), not events.
 */
export class NotificationPreferences1765370200000 implements MigrationInterface {
  name = 'NotificationPreferences1765370200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE notification_preferences (
         tenant_id text NOT NULL,
         principal_id text NOT NULL,
         kinds jsonb NOT NULL DEFAULT '{}'::jsonb,
         content text NOT NULL DEFAULT 'none' CHECK (content IN ('none', 'full')),
         quiet_start text,
         quiet_end text,
         quiet_zone text,
         updated_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (tenant_id, principal_id),
         CHECK ((quiet_start IS NULL) = (quiet_zone IS NULL) AND (quiet_end IS NULL) = (quiet_zone IS NULL))
       )`,
    );
    await q.query(
      `CREATE INDEX notification_preferences_quiet ON notification_preferences (tenant_id, principal_id) WHERE quiet_zone IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_preferences`);
  }
}
