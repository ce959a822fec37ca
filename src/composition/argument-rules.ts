import type { AgentSpec } from '../domain/agent';
import { ConfigurationError } from '../domain/errors';
import { ArgumentRuleError, parseArgumentRules } from '../policy/argument-rules';

/** Every agent file's argument rules compile, else startup is refused naming the agent and field. */
export function assertAgentArgumentRules(agents: readonly AgentSpec[]): void {
  for (const a of agents)
    for (const g of a.mcpGrants ?? []) {
      try {
        parseArgumentRules(g.rules, `mcp_servers.${g.serverId}.rules`);
      } catch (e) {
        if (!(e instanceof ArgumentRuleError)) throw e;
        throw new ConfigurationError(`agent ${a.id}: ${e.message}`, { agentId: a.id, field: e.field });
      }
    }
}
