import type { AgentSpec } from '../domain/agent';
import type { AgentCatalog } from '../ports/agent-catalog';

/**
 * An agent version as a command needs it (binding a session, queueing a run): the catalog's memoized
 * `definition` when it has one, else `current` (null `version`) or `get` (ADR 0053).
 */
export function agentDefinition(
  agents: AgentCatalog,
  agentId: string,
  version: number | null,
): Promise<AgentSpec | null> {
  if (agents.definition) return agents.definition(agentId, version);
  return version === null ? agents.current(agentId) : agents.get(agentId, version);
}
