import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * ADR 0036: registered webhook endpoints, the delivery outbox (one row per
 * notification and endpoint, claimed with SKIP LOCKED) and the log of every attempt.
 */
export class Webhooks1765100100000 implements MigrationInterface {
  name = 'Webhooks1765100100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE webhooks (
         id uuid PRIMARY KEY,
         tenant_id text NOT NULL,
         principal_id text NOT NULL,
         url text NOT NULL,
         kinds text[] NOT NULL,
         secret text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await q.query(`CREATE INDEX webhooks_owner ON webhooks (tenant_id, principal_id)`);
    await q.query(
      `CREATE TABLE notification_deliveries (
         id uuid PRIMARY KEY,
         notification_id uuid NOT NULL REFERENCES notifications(id),
         webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
         tenant_id text NOT NULL,
         status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','succeeded','dead')),
         attempts integer NOT NULL DEFAULT 0,
         next_attempt_at timestamptz NOT NULL DEFAULT now(),
         created_at timestamptz NOT NULL DEFAULT now(),
         delivered_at timestamptz,
         last_status integer,
         last_error text,
         UNIQUE (notification_id, webhook_id)
       )`,
    );
    await q.query(
      `CREATE INDEX notification_deliveries_due ON notification_deliveries (next_attempt_at) WHERE status = 'pending'`,
    );
    await q.query(
      `CREATE TABLE notification_delivery_attempts (
         delivery_id uuid NOT NULL REFERENCES notification_deliveries(id) ON DELETE CASCADE,
         attempt integer NOT NULL,
         outcome text NOT NULL CHECK (outcome IN ('delivery.succeeded','delivery.failed')),
         status_code integer,
         error text,
         at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (delivery_id, attempt)
       )`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_delivery_attempts`);
    await q.query(`DROP TABLE notification_deliveries`);
    await q.query(`DROP TABLE webhooks`);
  }
}
