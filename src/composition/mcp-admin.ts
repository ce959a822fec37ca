import type { McpAdmin } from '../api/mcp.controller';
import { ValidationError } from '../domain/errors';
import { ArgumentRuleError, parseArgumentRules } from '../policy/argument-rules';
import type { Platform } from './platform';

/** Binds the operator routes (McpController) to the platform's MCP hub and grant store. */
export function mcpAdminFor(platform: Pick<Platform, 'mcp' | 'mcpGrants' | 'mcpControl' | 'log'>): McpAdmin {
  return {
    status: () => platform.mcp.status(),
    has: (id) => platform.mcp.has(id),
    // Applied here, then broadcast so every other process (e.g. the worker of `agent start`) applies it too.
    control: async (id, action) => {
      const report = await platform.mcp.control(id, action);
      const others = await platform.mcpControl.broadcast(id, action).catch((e: unknown) => {
        platform.log.warn('mcp operator action not broadcast', { server: id, error: String(e) });
        return null;
      });
      return { server: report, others };
    },
    getGrant: (principal, agentId, serverId) => platform.mcpGrants.get(principal, agentId, serverId),
    replaceGrant: (principal, agentId, serverId, grant) =>
      platform.mcpGrants.replace(principal, agentId, serverId, {
        default: grant.default,
        tools: grant.tools,
        rules: rulesOrRefuse(grant.rules),
      }),
  };
}

/** The body's argument rules compiled (a rule that is not a valid schema → 400 naming the field). */
function rulesOrRefuse(raw: unknown) {
  try {
    return parseArgumentRules(raw, 'rules');
  } catch (e) {
    if (e instanceof ArgumentRuleError) throw new ValidationError(e.message, { field: e.field });
    throw e;
  }
}
