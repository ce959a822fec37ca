import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Export jobs run in the API process that accepted them; `heartbeat_at` is moved by that process
 * while a job runs, so a job whose process died (crash, SIGKILL, lost host) is recognised by a stale
 * heartbeat and reported failed (`interrupted`) instead of staying `running` forever (docs/trajectories.md).
 */
export class ExportHeartbeat1764700000000 implements MigrationInterface {
  name = 'ExportHeartbeat1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE trajectory_exports ADD COLUMN heartbeat_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE trajectory_exports DROP COLUMN heartbeat_at`);
  }
}
