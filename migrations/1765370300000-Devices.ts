import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 31 item 5: the device registry. A principal's devices, each with a name and a public key
 * (SPKI, EC P-256/P-384 or Ed25519), so a later push transport (APNs, Web Push) is one adapter
 * behind the notification delivery port. Configuration (like webhooks), not events.
 */
export class Devices1765370300000 implements MigrationInterface {
  name = 'Devices1765370300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE devices (
         id uuid PRIMARY KEY,
         tenant_id text NOT NULL,
         principal_id text NOT NULL,
         name text NOT NULL,
         public_key text NOT NULL,
         key_type text NOT NULL,
         fingerprint text NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         UNIQUE (tenant_id, principal_id, fingerprint)
       )`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE devices`);
  }
}
