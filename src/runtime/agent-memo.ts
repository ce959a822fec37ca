import type { AgentSpec } from '../domain/agent';
import type { McpServerGrant } from '../domain/mcp-grants';
import type { AgentCatalog } from '../ports/agent-catalog';

/** The memo's `get` also takes the agent's operator grants when the caller read them (the claim). */
export interface MemoizedAgentCatalog extends AgentCatalog {
  get(agentId: string, version: number, operatorGrants?: readonly McpServerGrant[]): Promise<AgentSpec | null>;
}

/** Distinct agent versions a run loop keeps (there are a handful in practice). */
const MAX_VERSIONS = 256;

/**
 * The run loop's view of the catalog: a persisted agent version never changes (the catalog refuses
 * to start when a definition differs from its stored version), so each (id, version) is read once
 * per process instead of once per run. `current` is not memoized: a new version may appear. What
 * may change at run time (operator MCP grants) is applied on every read through `withLive`.
 */
export function agentVersionMemo(catalog: AgentCatalog): MemoizedAgentCatalog {
  const known = new Map<string, AgentSpec>();
  return {
    current: (agentId) => catalog.current(agentId),
    async get(agentId, version, operatorGrants) {
      const key = `${agentId}\u0000${version}`;
      // Operator MCP grants change at run time: memoize only the stored version, overlay them per read.
      const split = catalog.getStored && catalog.withLive ? catalog : null;
      const live = (spec: AgentSpec | null) => (spec && split ? split.withLive!(spec, operatorGrants) : spec);
      const hit = known.get(key);
      if (hit) return live(hit);
      const spec = split ? await split.getStored!(agentId, version) : await catalog.get(agentId, version);
      if (spec) {
        if (known.size >= MAX_VERSIONS) known.delete(known.keys().next().value!);
        known.set(key, spec);
      }
      return live(spec);
    },
  };
}
