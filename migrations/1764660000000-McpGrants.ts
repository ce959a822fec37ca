import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Operator grants of MCP servers to agents (issue 10, docs/mcp.md "Per-agent grants"): one row per
 * (agent, server), replaced by `PUT /v1/agents/{agent_id}/mcp-grants/{server_id}` in the same
 * transaction as its audit event `agent.mcp_grant.replaced`. A row overrides the agent file's grant
 * for that server, for every version of the agent.
 */
export class McpGrants1764660000000 implements MigrationInterface {
  name = 'McpGrants1764660000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agent_mcp_grants (
        agent_id text NOT NULL,
        server_id text NOT NULL,
        default_decision text NOT NULL CHECK (default_decision IN ('allow', 'deny')),
        tools jsonb NOT NULL DEFAULT '{}',
        revision integer NOT NULL,
        updated_by text NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (agent_id, server_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE agent_mcp_grants');
  }
}
