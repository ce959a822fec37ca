import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 11 (ADR 0014, session 10): a tool invocation's row is updated by every step of its
 * lifecycle (authorized, running, succeeded, ...), and each of those updates changed `status`, which
 * `tool_invocations_run_tool_idx (run_id, tool_name, status)` indexed. So none of them could be HOT:
 * each wrote a new tuple and an entry into all four indexes (0 of 282 updates HOT over 100 run
 * lifecycles). The two queries that index served filter by run and tool name and then by the
 * arguments' hash (the duplicate-call lookup) or by `status = 'succeeded'` (a run's successful calls
 * of one tool); a run holds a handful of invocations, so `(run_id, tool_name, normalized_arguments_hash)`
 * serves both (the second filters the few rows of its prefix), and no lifecycle update touches an
 * indexed column any more. Fillfactor 70 leaves room on the row's page for the new version (the
 * completed row carries the result, larger than the proposed one), which HOT needs.
 */
export class HotToolInvocations1764800000000 implements MigrationInterface {
  name = 'HotToolInvocations1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX tool_invocations_run_tool_idx`);
    await q.query(
      `CREATE INDEX tool_invocations_run_tool_idx ON tool_invocations (run_id, tool_name, normalized_arguments_hash)`,
    );
    await q.query(`ALTER TABLE tool_invocations SET (fillfactor = 70)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tool_invocations RESET (fillfactor)`);
    await q.query(`DROP INDEX tool_invocations_run_tool_idx`);
    await q.query(`CREATE INDEX tool_invocations_run_tool_idx ON tool_invocations (run_id, tool_name, status)`);
  }
}
