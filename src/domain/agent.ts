import type { RunLimits } from './run/limits';

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
  readonly policyProfile: string;
  readonly limits: RunLimits;
  readonly metadata: Readonly<Record<string, unknown>>;
}

const MCP_TOOL = /^mcp\.([a-z][a-z0-9_]*)\.[a-z][a-z0-9_]*$/;

/** Whether the agent may use the tool: listed in `enabledTools`, or an MCP tool of a granted server. */
export function isToolEnabled(agent: Pick<AgentSpec, 'enabledTools' | 'mcpServers'>, name: string): boolean {
  if (agent.enabledTools.includes(name)) return true;
  const m = MCP_TOOL.exec(name);
  return m !== null && (agent.mcpServers ?? []).includes(m[1]);
}

/** `enabledTools` plus every registered MCP tool of a server the agent is granted. */
export function enabledToolNames(
  agent: Pick<AgentSpec, 'enabledTools' | 'mcpServers'>,
  registeredNames: readonly string[],
): string[] {
  const mcp = registeredNames.filter((n) => MCP_TOOL.test(n) && isToolEnabled(agent, n));
  return [...agent.enabledTools, ...mcp];
}
