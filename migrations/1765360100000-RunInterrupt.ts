import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 33 (ADR 0038): `multitask_strategy: interrupt`.
 *
 * - `runs.interrupt`: `{mode, byRunId}` of `run.interrupt_requested` (which also sets
 *   `cancel_requested_at`, so the loop's safe points stop it) and of `run.interrupted`.
 * - `interrupted` is a terminal status: `runs_one_active_per_session` leaves it out like the others.
 */
export class RunInterrupt1765360100000 implements MigrationInterface {
  name = 'RunInterrupt1765360100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN interrupt jsonb`);
    await q.query(`DROP INDEX runs_one_active_per_session`);
    await q.query(`
      CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
      WHERE status NOT IN ('completed', 'failed', 'cancelled', 'interrupted') AND queued_behind IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_one_active_per_session`);
    await q.query(`
      CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
      WHERE status NOT IN ('completed', 'failed', 'cancelled') AND queued_behind IS NULL`);
    await q.query(`ALTER TABLE runs DROP COLUMN interrupt`);
  }
}
