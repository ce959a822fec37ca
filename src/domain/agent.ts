import { isMcpToolGranted, parseMcpToolName, type McpServerGrant } from './mcp-grants';
import type { RunLimits } from './run/limits';
import type { MultitaskStrategy } from './run/multitask';

/** An agent is configuration, not a subclass (plan §6.1). Persisted with its version before use. */
export interface AgentSpec {
  readonly id: string;
  readonly version: number;
  readonly name: string;
  readonly instructions: string;
  /** A model policy name resolved by the model router, e.g. `demo` or `fake:calculator_then_answer`. */
  readonly modelPolicy: string;
  readonly enabledTools: readonly string[];
  readonly enabledSkills: readonly string[];
  /** MCP servers whose discovered tools (`mcp.<server>.<tool>`) this agent may use (docs/mcp.md). */
  readonly mcpServers?: readonly string[];
  /**
   * The effective per-server grants (default allow/deny + per-tool overrides): the agent file's,
   * replaced per server by an operator's (`PUT /v1/agents/{id}/mcp-grants/{server}`). When absent,
   * every server in `mcpServers` is granted with default allow.
   */
  readonly mcpGrants?: readonly McpServerGrant[];
  readonly policyProfile: string;
  /** What a message does while a run of the session works (`multitask_strategy`); absent: `reject`. */
  readonly multitaskStrategy?: MultitaskStrategy;
  readonly limits: RunLimits;
  /**
   * The most a run of this agent may do (`allowed_scopes`, ADR 0032): a run's scope set is its
   * submitter's scopes narrowed to these. Absent: the agent narrows nothing.
   */
  readonly allowedScopes?: readonly string[];
  /**
   * Enabled tools a `sandbox.run_program` program may call through the bridge besides pure
   * computations (`bridge_tools`); each call is policed and approved like the model's own.
   */
  readonly bridgeTools?: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
}

type ToolAccess = Pick<AgentSpec, 'enabledTools' | 'mcpServers' | 'mcpGrants'> & {
  readonly enabledSkills?: readonly string[];
};

/** The skill loader is offered to an agent with a non-empty `enabled_skills` (docs/skills.md). */
const SKILL_LOAD = 'skill.load';
const hasSkills = (agent: ToolAccess) => (agent.enabledSkills ?? []).length > 0;

/** The agent's effective MCP grants (an `mcp_servers` list means default allow on each). */
export function mcpGrantsOf(agent: Pick<AgentSpec, 'mcpServers' | 'mcpGrants'>): readonly McpServerGrant[] {
  return agent.mcpGrants ?? (agent.mcpServers ?? []).map((serverId) => ({ serverId, default: 'allow', tools: {} }));
}

/** Whether the agent may use the tool: listed in `enabledTools`, or an MCP tool its grants allow. */
export function isToolEnabled(agent: ToolAccess, name: string): boolean {
  if (agent.enabledTools.includes(name)) return true;
  if (name === SKILL_LOAD) return hasSkills(agent);
  return isMcpToolGranted(mcpGrantsOf(agent), name);
}

/** `enabledTools` plus every registered MCP tool the agent's grants allow. */
export function enabledToolNames(agent: ToolAccess, registeredNames: readonly string[]): string[] {
  const grants = mcpGrantsOf(agent);
  const mcp = registeredNames.filter((n) => parseMcpToolName(n) !== null && isMcpToolGranted(grants, n));
  return [...agent.enabledTools, ...(hasSkills(agent) ? [SKILL_LOAD] : []), ...mcp];
}
