import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * ADR 0036: the notification stream's position. `GET /v1/notifications/events` replays after a
 * Last-Event-ID of `<transaction_id>-<stream_position>` in that order, and only below the horizon
 * `pg_snapshot_xmin(pg_current_snapshot())`, like the global event log's readers: a row whose
 * transaction commits late (its position was drawn earlier) is never skipped. Both are operational
 * columns (set by their defaults in the append's own transaction, kept by the rebuild).
 */
export class NotificationStream1765370000000 implements MigrationInterface {
  name = 'NotificationStream1765370000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notifications ADD COLUMN stream_position bigserial`);
    await q.query(`ALTER TABLE notifications ADD COLUMN transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id()`);
    await q.query(`CREATE INDEX notifications_stream ON notifications (tenant_id, transaction_id, stream_position)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX notifications_stream`);
    await q.query(`ALTER TABLE notifications DROP COLUMN transaction_id`);
    await q.query(`ALTER TABLE notifications DROP COLUMN stream_position`);
  }
}
