import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 31: a scheduled occurrence's run records its schedule (`run.queued` v4 `scheduleId`), so its
 * `run.completed` / `run.failed` name it and notify as a scheduled result.
 *
 * - `runs.schedule_id`: the schedule whose occurrence queued the run; null for every other run. The
 *   run projection (v7) folds it; `agent projections rebuild --projection runs` fills it for runs
 *   queued since (older `run.queued` events recorded no schedule, so they stay null).
 */
export class RunSchedule1765420000000 implements MigrationInterface {
  name = 'RunSchedule1765420000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN schedule_id uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN schedule_id`);
  }
}
