import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * ADR 0032: every run records the exact scope set it may use (`run.queued` v2 `scopes`), and the
 * run projection keeps it in `runs.scopes` (a sorted JSON array of scope names), which the worker
 * authorizes tool calls against.
 *
 * Runs queued before this revision were all executed with the local principal's fixed scope set;
 * the `run.queued` v1 upcaster gives them that set, and the backfill below writes the same list,
 * so a projection rebuild reproduces the live rows exactly. The column defaults to the empty set:
 * a row written without one grants nothing.
 */
export class RunScopes1765300000000 implements MigrationInterface {
  name = 'RunScopes1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN scopes jsonb NOT NULL DEFAULT '[]'::jsonb`);
    await q.query(
      `UPDATE runs SET scopes = '["approvals.read","approvals.resolve","consent.admin","consent.manage","runs.read","runs.write","sessions.read","sessions.write","tools.use","trajectories.export"]'::jsonb`,
    );
    await q.query(
      `COMMENT ON COLUMN runs.scopes IS 'The run''s recorded scope set (run.queued v2, ADR 0032): sorted scope names its tool calls are authorized against.'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN scopes`);
  }
}
