import type { AgentSpec } from '../domain/agent';
import type { McpServerGrant } from '../domain/mcp-grants';

/** Versioned agent definitions: loaded from YAML, persisted with their version before use (§6.1). */
export interface AgentCatalog {
  /** The newest version of an agent, or null when the id is unknown. */
  current(agentId: string): Promise<AgentSpec | null>;
  /** A specific persisted version (a run always uses the version its session was created with). */
  get(agentId: string, version: number): Promise<AgentSpec | null>;
  /**
   * Optional split of `get` for callers that memoize versions: `getStored` is the immutable stored
   * version, `withLive` applies what may change at run time (operator MCP grants, the model policy
   * override). `get(id, v)` equals `withLive(getStored(id, v))`.
   */
  getStored?(agentId: string, version: number): Promise<AgentSpec | null>;
  /**
   * `operatorGrants`: the agent's operator MCP grants when the caller has just read them itself (the
   * run claim does, in its statement); read here otherwise.
   */
  withLive?(spec: AgentSpec, operatorGrants?: readonly McpServerGrant[]): Promise<AgentSpec>;
  /**
   * The agent as a command needs it (a session's binding; a queued run's model policy, limits, scopes
   * and multitask strategy): the stored version, the newest for a null `version`, without the operator
   * MCP grants (the run reads those when it starts). Cheaper than `current`/`get` (memoized by the
   * adapter); absent: callers use those.
   */
  definition?(agentId: string, version: number | null): Promise<AgentSpec | null>;
}
