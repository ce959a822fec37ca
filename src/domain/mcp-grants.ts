/**
 * Per-agent MCP access (ClotoCore's capability → server → tool model, docs/mcp.md "Per-agent
 * grants"): an agent may use a server's tools only through a grant, which has a default decision
 * and per-tool overrides keyed by the tool part of `mcp.<server>.<tool>`.
 */
export type GrantDecision = 'allow' | 'deny';

/** One tool's argument rules: per argument name, a JSON Schema the argument must satisfy when given. */
export type ArgumentRules = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

export interface McpServerGrant {
  readonly serverId: string;
  readonly default: GrantDecision;
  readonly tools: Readonly<Record<string, GrantDecision>>;
  /**
   * Per tool (the tool part of `mcp.<server>.<tool>`), constraints on its arguments checked by
   * policy before the call runs (docs/mcp.md "Argument rules"); absent or empty: none.
   */
  readonly rules?: Readonly<Record<string, ArgumentRules>>;
}

const MCP_TOOL = /^mcp\.([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)$/;

/** `mcp.<server>.<tool>` split, or null for any other name. */
export function parseMcpToolName(name: string): { serverId: string; tool: string } | null {
  const m = MCP_TOOL.exec(name);
  return m ? { serverId: m[1], tool: m[2] } : null;
}

/** Whether `grants` allow the MCP tool `name`: the server's per-tool override, else its default; no grant = deny. */
export function isMcpToolGranted(grants: readonly McpServerGrant[], name: string): boolean {
  const parsed = parseMcpToolName(name);
  if (!parsed) return false;
  // `read_resource` is the server's resource reader (docs/mcp.md); it follows the same grant.
  const grant = grants.find((g) => g.serverId === parsed.serverId);
  if (!grant) return false;
  return (grant.tools[parsed.tool] ?? grant.default) === 'allow';
}

/** The argument rules the agent's grant sets on the MCP tool `name`, or null when it sets none. */
export function mcpArgumentRules(grants: readonly McpServerGrant[], name: string): ArgumentRules | null {
  const parsed = parseMcpToolName(name);
  if (!parsed) return null;
  const rules = grants.find((g) => g.serverId === parsed.serverId)?.rules?.[parsed.tool];
  return rules && Object.keys(rules).length > 0 ? rules : null;
}

/** Replaces (or adds) the grant for one server; order is by server id so the result is canonical. */
export function withGrant(grants: readonly McpServerGrant[], grant: McpServerGrant): McpServerGrant[] {
  return [...grants.filter((g) => g.serverId !== grant.serverId), grant].sort((a, b) =>
    a.serverId < b.serverId ? -1 : a.serverId > b.serverId ? 1 : 0,
  );
}
