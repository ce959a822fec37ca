import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 33 (ADR 0038): a message may be queued behind a working run (`multitask_strategy: enqueue`).
 *
 * - `sessions.queued_run_ids`: the runs waiting behind the active one, FIFO (the session projection
 *   folds it from `run.queued` v2 and the runs' ending events; `active_run_id` takes the next).
 * - `runs.queued_behind`: the run a run was queued behind. Such a run is claimable only once it is
 *   its session's active run (the claim checks `sessions.active_run_id`).
 * - `runs_one_active_per_session` now covers the runs queued with nothing ahead of them: a run
 *   waiting in a session's queue is non-terminal beside the active one. Who may queue behind whom is
 *   decided by the session decider against the session's state, appended conditionally on its
 *   sequence; the index still refuses two plain runs racing into an idle session.
 */
export class SessionRunQueue1765360000000 implements MigrationInterface {
  name = 'SessionRunQueue1765360000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN queued_run_ids jsonb NOT NULL DEFAULT '[]'::jsonb`);
    await q.query(`ALTER TABLE runs ADD COLUMN queued_behind uuid`);
    await q.query(`DROP INDEX runs_one_active_per_session`);
    await q.query(`
      CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
      WHERE status NOT IN ('completed', 'failed', 'cancelled') AND queued_behind IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_one_active_per_session`);
    await q.query(`
      CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
      WHERE status NOT IN ('completed', 'failed', 'cancelled')`);
    await q.query(`ALTER TABLE runs DROP COLUMN queued_behind`);
    await q.query(`ALTER TABLE sessions DROP COLUMN queued_run_ids`);
  }
}
