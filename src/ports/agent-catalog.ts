import type { AgentSpec } from '../domain/agent';

/** Versioned agent definitions: loaded from YAML, persisted with their version before use (§6.1). */
export interface AgentCatalog {
  /** The newest version of an agent, or null when the id is unknown. */
  current(agentId: string): Promise<AgentSpec | null>;
  /** A specific persisted version (a run always uses the version its session was created with). */
  get(agentId: string, version: number): Promise<AgentSpec | null>;
}
