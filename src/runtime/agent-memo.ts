import type { AgentSpec } from '../domain/agent';
import type { AgentCatalog } from '../ports/agent-catalog';

/** Distinct agent versions a run loop keeps (there are a handful in practice). */
const MAX_VERSIONS = 256;

/**
 * The run loop's view of the catalog: a persisted agent version never changes (the catalog refuses
 * to start when a definition differs from its stored version), so each (id, version) is read once
 * per process instead of once per run. `current` is not memoized: a new version may appear.
 */
export function agentVersionMemo(catalog: AgentCatalog): AgentCatalog {
  const known = new Map<string, AgentSpec>();
  return {
    current: (agentId) => catalog.current(agentId),
    async get(agentId, version) {
      const key = `${agentId}\u0000${version}`;
      const hit = known.get(key);
      if (hit) return hit;
      const spec = await catalog.get(agentId, version);
      if (spec) {
        if (known.size >= MAX_VERSIONS) known.delete(known.keys().next().value!);
        known.set(key, spec);
      }
      return spec;
    },
  };
}
