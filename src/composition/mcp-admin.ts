import type { McpAdmin } from '../api/mcp.controller';
import type { Platform } from './platform';

/** Binds the operator routes (McpController) to the platform's MCP hub and grant store. */
export function mcpAdminFor(platform: Pick<Platform, 'mcp' | 'mcpGrants'>): McpAdmin {
  return {
    status: () => platform.mcp.status(),
    has: (id) => platform.mcp.has(id),
    control: (id, action) => platform.mcp.control(id, action),
    getGrant: (principal, agentId, serverId) => platform.mcpGrants.get(principal, agentId, serverId),
    replaceGrant: (principal, agentId, serverId, grant) =>
      platform.mcpGrants.replace(principal, agentId, serverId, grant),
  };
}
