import type { McpServerEntry } from '../domain/deciders/mcp-server';
import type { Principal } from '../domain/principal';

/** A change the API asks for (ADR 0052); `entry` is a validated config/mcp.yaml server entry. */
export type McpServerChange =
  | { readonly kind: 'add'; readonly serverId: string; readonly entry: McpServerEntry }
  | { readonly kind: 'update'; readonly serverId: string; readonly entry: McpServerEntry }
  | { readonly kind: 'remove'; readonly serverId: string };

/** The log of MCP servers managed at run time: `mcp.server.added|updated|removed`, decided and appended. */
export interface McpServerLog {
  /**
   * Decides and appends one change against the log; `seeded` is the server's config/mcp.yaml entry
   * (null: not in the file). Refusals (409 taken id, 404 unknown server) write nothing; false when
   * the change changed nothing.
   */
  apply(principal: Principal, change: McpServerChange, seeded: McpServerEntry | null): Promise<boolean>;
}
