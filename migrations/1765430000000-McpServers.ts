import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 34 item 2 (ADR 0052): MCP servers managed at run time.
 *
 * - `mcp_servers`: one row per server the API has added, changed or removed, folded from
 *   `mcp.server.added|updated|removed` in the platform's MCP server audit session (projection
 *   `mcp_servers`; `agent projections rebuild` reproduces it). `id` is the stable uuid of the server
 *   id; `entry` the server entry as config/mcp.yaml spells it (variable names, never secret values);
 *   a removed server keeps its row with status `removed`, so a removal of a YAML server is honoured.
 */
export class McpServers1765430000000 implements MigrationInterface {
  name = 'McpServers1765430000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE mcp_servers (
        id uuid PRIMARY KEY,
        session_id uuid NOT NULL,
        tenant_id text NOT NULL,
        server_id text NOT NULL UNIQUE,
        status text NOT NULL CHECK (status IN ('active', 'removed')),
        origin text NOT NULL CHECK (origin IN ('yaml', 'api')),
        entry jsonb,
        revision integer NOT NULL,
        updated_by text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE mcp_servers`);
  }
}
