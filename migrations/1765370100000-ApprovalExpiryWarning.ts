import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 31: `approvals.expiry_warned_at`, folded from `approval.expiring` (the approvals projection,
 * version 3): when the reaper warned that the approval is about to expire. The partial index serves
 * the reaper's "pending, deadline near, not warned yet" query.
 */
export class ApprovalExpiryWarning1765370100000 implements MigrationInterface {
  name = 'ApprovalExpiryWarning1765370100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE approvals ADD COLUMN expiry_warned_at timestamptz`);
    await q.query(
      `CREATE INDEX approvals_expiry_warning ON approvals (expires_at) WHERE status = 'pending' AND expiry_warned_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX approvals_expiry_warning`);
    await q.query(`ALTER TABLE approvals DROP COLUMN expiry_warned_at`);
  }
}
