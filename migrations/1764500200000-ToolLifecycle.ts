import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 3 (tool lifecycle, plan §8.4/§9.3): the record table of the `demo.external_write` tool
 * (what it would have written; it calls nothing external) and the indexes the approval reaper and
 * the UNCERTAIN review need. `tool_invocations.effect_sent_at` already exists (revision 2).
 */
export class ToolLifecycle1764500200000 implements MigrationInterface {
  name = 'ToolLifecycle1764500200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE demo_external_writes (
        id bigserial PRIMARY KEY,
        tenant_id text NOT NULL,
        session_id uuid NOT NULL,
        run_id uuid NOT NULL,
        invocation_id uuid NOT NULL,
        idempotency_key text NOT NULL,
        target text NOT NULL,
        content text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX demo_external_writes_run_idx ON demo_external_writes (run_id)`);
    await q.query(`CREATE INDEX tool_invocations_run_tool_idx ON tool_invocations (run_id, tool_name, status)`);
    await q.query(`CREATE INDEX approvals_invocation_idx ON approvals (tool_invocation_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX approvals_invocation_idx`);
    await q.query(`DROP INDEX tool_invocations_run_tool_idx`);
    await q.query(`DROP TABLE demo_external_writes`);
  }
}
