import type { Logger } from '../../ports/logger';
import { noopMetrics, type McpMetrics } from '../../ports/metrics';
import type { Tool } from '../../ports/tool';
import type { McpConfig, McpServerConfig } from './mcp-config';
import { checkIsolation, NO_HIDDEN, type McpIsolationHost } from './isolation';
import { mapTools } from './mcp-tools';
import { McpServerSupervisor, type RestartPolicy, type ServerStatus } from './supervisor';

export { loadMcpConfig, parseMcpConfig, RESERVED_DOMAINS, UNCLASSIFIED } from './mcp-config';
export type { McpConfig, McpServerConfig, McpHttpAuth, RestartStrategy, McpIsolation } from './mcp-config';
export { MCP_ISOLATION_PROFILES } from './mcp-config';
export type { McpIsolationHost } from './isolation';
export { isolationUnavailable } from './isolation';
export { MCP_PROTOCOL_VERSIONS } from './mcp-config';
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

/** What `GET /v1/mcp/servers` reports per server. */
export interface McpServerReport extends ServerStatus {
  /** Tools offered after the last discovery (disabled ones excluded). */
  readonly toolCount: number;
  readonly disabledTools: readonly { readonly name: string; readonly reason: string }[];
}

/** All configured MCP servers of one process, each under its own supervisor. */
export class McpHub {
  private readonly supervisors = new Map<string, McpServerSupervisor>();
  private readonly discovered = new Map<string, DiscoveryResult>();
  /** Set by the composition root: called with a fresh discovery after list_changed or a restart. */
  onRediscovered: ((result: DiscoveryResult) => void) | null = null;

  constructor(
    readonly config: McpConfig,
    private readonly log: Logger,
    /** Replaces fields of every server's configured restart policy (tests shorten the backoff). */
    private readonly policy: Partial<RestartPolicy> = {},
    private readonly metrics: McpMetrics = noopMetrics,
    /** What isolated servers never see (the data directory, keys); an entry that would is refused here. */
    private readonly isolationHost: McpIsolationHost = NO_HIDDEN,
  ) {
    checkIsolation(config, isolationHost);
    for (const s of config.servers) this.supervise(s);
  }

  /**
   * A server added or changed at run time (ADR 0052): its previous supervisor, if any, is stopped
   * first; the new one starts at its first discovery. An isolation the host cannot give is refused.
   */
  async put(server: McpServerConfig): Promise<void> {
    this.check(server);
    await this.remove(server.id);
    this.supervise(server);
  }

  /** Refuses (ConfigurationError naming the field) an entry whose isolation this host cannot give. */
  check(server: McpServerConfig): void {
    checkIsolation({ version: this.config.version, servers: [server] }, this.isolationHost);
  }

  /** Stops and forgets a server removed at run time; false when this process did not have it. */
  async remove(serverId: string): Promise<boolean> {
    const sup = this.supervisors.get(serverId);
    if (!sup) return false;
    this.supervisors.delete(serverId);
    this.discovered.delete(serverId);
    sup.onToolsChanged = null;
    await sup.stop();
    return true;
  }

  /** The configuration a server runs with here, or null. */
  configOf(serverId: string): McpServerConfig | null {
    return this.supervisors.get(serverId)?.config ?? null;
  }

  private supervise(s: McpServerConfig): void {
    const sup = new McpServerSupervisor(s, this.log, this.policy, Date.now, this.metrics, this.isolationHost);
    sup.onToolsChanged = () => {
      // Only servers someone discovered (granted to an agent) are re-discovered.
      if (!this.discovered.has(s.id) || this.supervisors.get(s.id) !== sup) return;
      void this.discover(s.id).then((r) => {
        if (r.error === null) this.onRediscovered?.(r);
      });
    };
    this.supervisors.set(s.id, sup);
  }

  get serverIds(): string[] {
    return [...this.supervisors.keys()];
  }

  /** Starts the server (first use) and maps its tools; never throws for an unreachable server. */
  async discover(serverId: string): Promise<DiscoveryResult> {
    const sup = this.supervisor(serverId);
    try {
      const mapped = mapTools(
        sup,
        await sup.listTools(),
        await sup.hasResources(),
        await sup.hasResourceSubscriptions(),
      );
      for (const d of mapped.disabled)
        this.log.warn('mcp tool disabled', { server: serverId, tool: d.name, reason: d.reason });
      const result = { serverId, tools: mapped.tools, disabled: mapped.disabled, error: null };
      this.discovered.set(serverId, result);
      return result;
    } catch (e) {
      const error = (e as Error).message;
      this.log.error('mcp server_unavailable: discovery failed', { server: serverId, error });
      const result = { serverId, tools: [], disabled: [], error };
      if (!this.discovered.has(serverId)) this.discovered.set(serverId, result);
      return result;
    }
  }

  /** Records tools the registry refused (e.g. a schema strict Ajv cannot compile) as disabled. */
  markDisabled(serverId: string, name: string, reason: string): void {
    const d = this.discovered.get(serverId);
    if (!d) return;
    this.discovered.set(serverId, {
      ...d,
      tools: d.tools.filter((t) => t.spec.name !== name),
      disabled: [...d.disabled.filter((x) => x.name !== name), { name, reason }],
    });
  }

  status(): McpServerReport[] {
    return [...this.supervisors.values()].map((s) => {
      const d = this.discovered.get(s.config.id);
      return { ...s.status(), toolCount: d?.tools.length ?? 0, disabledTools: d?.disabled ?? [] };
    });
  }

  /** Prompts of every server that is up, for read-only skills (docs/skills.md). */
  promptProviders(): {
    serverId: string;
    list(): ReturnType<McpServerSupervisor['listPrompts']>;
    get(name: string): Promise<string>;
  }[] {
    return [...this.supervisors.values()]
      .filter((s) => s.status().state === 'ready')
      .map((s) => ({
        serverId: s.config.id,
        list: () => s.listPrompts(),
        get: (name: string) => s.getPrompt(name, {}, s.config.callTimeoutSeconds * 1000),
      }));
  }

  has(serverId: string): boolean {
    return this.supervisors.has(serverId);
  }

  /** Operator actions (`POST /v1/mcp/servers/{id}/start|stop|restart`); start and restart reset the restart window. */
  async control(serverId: string, action: 'start' | 'stop' | 'restart'): Promise<McpServerReport> {
    const sup = this.supervisor(serverId);
    this.log.info('mcp server operator action', { server: serverId, action });
    try {
      if (action === 'stop') await sup.stop();
      else if (action === 'start') await sup.start();
      else await sup.restart();
    } catch (e) {
      // The state and last error say why; the caller reports them.
      this.log.warn('mcp server operator action failed', { server: serverId, action, error: (e as Error).message });
    }
    return this.status().find((s) => s.id === serverId)!;
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
