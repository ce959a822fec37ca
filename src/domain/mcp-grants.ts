/**
 * Per-agent MCP access (ClotoCore's capability → server → tool model, docs/mcp.md "Per-agent
 * grants"): an agent may use a server's tools only through a grant, which has a default decision
 * and per-tool overrides keyed by the tool part of `mcp.<server>.<tool>`.
 */
export type GrantDecision = 'allow' | 'deny';

export interface McpServerGrant {
  readonly serverId: string;
  readonly default: GrantDecision;
  readonly tools: Readonly<Record<string, GrantDecision>>;
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

/** Replaces (or adds) the grant for one server; order is by server id so the result is canonical. */
export function withGrant(grants: readonly McpServerGrant[], grant: McpServerGrant): McpServerGrant[] {
  return [...grants.filter((g) => g.serverId !== grant.serverId), grant].sort((a, b) =>
    a.serverId < b.serverId ? -1 : a.serverId > b.serverId ? 1 : 0,
  );
}
