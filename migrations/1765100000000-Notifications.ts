import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * ADR 0036: `notifications`, the inbox and transactional outbox, written by the append
 * statement as an inline projection (src/domain/projections/notification-projection.ts).
 * `read_at` (the inbox) and `dispatched_at` (the notifier) are operational columns.
 */
export class Notifications1765100000000 implements MigrationInterface {
  name = 'Notifications1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE notifications (
         id uuid PRIMARY KEY,
         dedupe_key text NOT NULL UNIQUE,
         tenant_id text NOT NULL,
         session_id uuid NOT NULL,
         run_id uuid,
         principal_id text,
         kind text NOT NULL,
         subject_id text NOT NULL,
         summary jsonb NOT NULL,
         links jsonb NOT NULL,
         created_at timestamptz NOT NULL,
         read_at timestamptz,
         dispatched_at timestamptz
       )`,
    );
    await q.query(
      `CREATE INDEX notifications_inbox ON notifications (tenant_id, session_id, created_at DESC, id DESC)`,
    );
    await q.query(`CREATE INDEX notifications_undispatched ON notifications (created_at) WHERE dispatched_at IS NULL`);
    await q.query(
      `COMMENT ON TABLE notifications IS 'Inline projection (ADR 0036): one row per notification an event triggered, content-free; principal_id NULL means the session owner. read_at and dispatched_at are operational.'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notifications`);
  }
}
