import type { Logger } from '../../ports/logger';
import type { Tool } from '../../ports/tool';
import type { McpConfig } from './mcp-config';
import { mapTools } from './mcp-tools';
import { DEFAULT_RESTART_POLICY, McpServerSupervisor, type RestartPolicy, type ServerStatus } from './supervisor';

export { loadMcpConfig, parseMcpConfig, RESERVED_DOMAINS, UNCLASSIFIED } from './mcp-config';
export type { McpConfig, McpServerConfig } from './mcp-config';
export { mcpToolName, classify, limitOutput } from './mcp-tools';
export { DEFAULT_RESTART_POLICY } from './supervisor';
export type { RestartPolicy, ServerStatus } from './supervisor';

export interface DiscoveryResult {
  readonly serverId: string;
  readonly tools: Tool[];
  readonly disabled: { readonly name: string; readonly reason: string }[];
  /** Set when the server could not be reached; `tools` is then empty. */
  readonly error: string | null;
}

/** All configured MCP servers of one process, each under its own supervisor. */
export class McpHub {
  private readonly supervisors = new Map<string, McpServerSupervisor>();

  constructor(
    readonly config: McpConfig,
    private readonly log: Logger,
    policy: RestartPolicy = DEFAULT_RESTART_POLICY,
  ) {
    for (const s of config.servers) this.supervisors.set(s.id, new McpServerSupervisor(s, log, policy));
  }

  get serverIds(): string[] {
    return [...this.supervisors.keys()];
  }

  /** Starts the server (first use) and maps its tools; never throws for an unreachable server. */
  async discover(serverId: string): Promise<DiscoveryResult> {
    const sup = this.supervisor(serverId);
    try {
      const mapped = mapTools(sup, await sup.listTools());
      for (const d of mapped.disabled)
        this.log.warn('mcp tool disabled', { server: serverId, tool: d.name, reason: d.reason });
      return { serverId, tools: mapped.tools, disabled: mapped.disabled, error: null };
    } catch (e) {
      const error = (e as Error).message;
      this.log.error('mcp server_unavailable: discovery failed', { server: serverId, error });
      return { serverId, tools: [], disabled: [], error };
    }
  }

  status(): ServerStatus[] {
    return [...this.supervisors.values()].map((s) => s.status());
  }

  /** The running child's pid, or null. */
  pidOf(serverId: string): number | null {
    return this.supervisor(serverId).pid;
  }

  async close(): Promise<void> {
    await Promise.all([...this.supervisors.values()].map((s) => s.stop()));
  }

  private supervisor(serverId: string): McpServerSupervisor {
    const s = this.supervisors.get(serverId);
    if (!s) throw new Error(`no MCP server ${serverId} is configured`);
    return s;
  }
}
