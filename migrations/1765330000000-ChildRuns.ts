import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Child runs of `delegate.run` (issue 32, plan §27.6, ADR 0037).
 *
 * - `runs.delegation`: what `run.delegated` recorded of a child run (its brief index, tool subset,
 *   scopes and the parent's session); null for a turn. `runs.parent_run_id` has existed since
 *   revision 2 and is now written.
 * - `runs_parent_idx`: a parent's children (the join, the run view, cancellation), and the CLI
 *   worker's claim of a run's tree.
 * - `runs_waiting_for_children_idx`: the join sweep's parents.
 */
export class ChildRuns1765330000000 implements MigrationInterface {
  name = 'ChildRuns1765330000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN delegation jsonb`);
    await q.query(`CREATE INDEX runs_parent_idx ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL`);
    await q.query(`CREATE INDEX runs_waiting_for_children_idx ON runs (id) WHERE status = 'waiting_for_children'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_waiting_for_children_idx`);
    await q.query(`DROP INDEX runs_parent_idx`);
    await q.query(`ALTER TABLE runs DROP COLUMN delegation`);
  }
}
