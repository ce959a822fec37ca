import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 34 item 4: an operator grant's per-tool argument rules (`{<tool>: {<argument>: <JSON
 * Schema>}}`, docs/mcp.md "Argument rules"), replaced with the rest of the grant and audited in
 * `agent.mcp_grant.replaced` v2. Existing rows have none.
 */
export class McpGrantArgumentRules1765374340000 implements MigrationInterface {
  name = 'McpGrantArgumentRules1765374340000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_mcp_grants ADD COLUMN rules jsonb NOT NULL DEFAULT '{}'::jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE agent_mcp_grants DROP COLUMN rules');
  }
}
