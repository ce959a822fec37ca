import { ChildStdioTransport } from './child-stdio-transport';
import { Client, SdkError, SdkErrorCode, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Logger } from '../../ports/logger';
import { noopMetrics, type McpMetrics } from '../../ports/metrics';
import type { McpServerConfig, RestartPolicy } from './mcp-config';
import { NO_HIDDEN, stdioLaunch, type McpIsolationHost } from './isolation';
import { ObservedTransport } from './observed-transport';
import { redactCredentials } from './redact';

export { DEFAULT_RESTART_POLICY } from './mcp-config';
export type { RestartPolicy } from './mcp-config';

export type ServerState = 'idle' | 'starting' | 'ready' | 'backoff' | 'failed' | 'stopped';

export interface ServerStatus {
  readonly id: string;
  readonly transport: 'stdio' | 'http';
  readonly state: ServerState;
  readonly restarts: number;
  readonly lastError: string | null;
  readonly pid: number | null;
  /** The server's self-reported name while connected. */
  readonly server: string | null;
  /** The protocol version agreed (initialize handshake or `server/discover`) while connected. */
  readonly protocolVersion: string | null;
  /** The MCP era this connection settled on (ADR 0051): `legacy` (initialize) or `modern` (2026-07-28+), null until connected. */
  readonly era: 'legacy' | 'modern' | null;
  /** Counters since process start, for a metrics port to read (calls, failed calls, protocol errors). */
  readonly counters: { readonly calls: number; readonly failedCalls: number; readonly protocolErrors: number };
}

/** The server broke the protocol during a call (invalid JSON-RPC, wrong shapes): the call fails, nothing crashes. */
export class McpProtocolFault extends Error {}

/**
 * A modern-era server answered `resultType: input_required` (a multi-round continuation asking the
 * client for elicitation, sampling or roots): agent-core has no flow for it, so the call fails
 * explicitly instead of parsing as a final result.
 */
export class McpInputRequired extends Error {}

/** The longest server instructions kept (the rest is cut: they cost prefix tokens on every call). */
export const SERVER_NOTES_MAX_CHARS = 2000;

/**
 * How long the `server/discover` probe may stay unanswered before the server counts as legacy: the
 * seed bounds the window at 10 s (§3.1.3); 8 s leaves room for the fallback's handshake inside it.
 */
export const ERA_PROBE_TIMEOUT_MS = 8_000;

/** A discovered tool as the server described it (no SDK type leaves this folder). */
export interface DiscoveredTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations: { readonly readOnlyHint?: boolean; readonly destructiveHint?: boolean };
}

/** The server cannot take calls now: not started, crashed and restarting, or marked failed. */
export class McpServerUnavailable extends Error {
  constructor(
    readonly serverId: string,
    readonly reason: string,
  ) {
    super(`MCP server ${serverId} is unavailable: ${reason}`);
  }
}

export interface CallOutcome {
  readonly isError: boolean;
  readonly content: unknown[];
  readonly structuredContent: Record<string, unknown> | null;
}

/**
 * One stdio MCP server: started on first use, restarted on failure with exponential backoff, and
 * marked failed (calls then fail fast with the reason) after `maxRestarts` failures inside
 * `windowMs`. A child that exits or crashes only changes this object's state; nothing is thrown
 * out of an event handler, so it never takes the host process down.
 */
export class McpServerSupervisor {
  private state: ServerState = 'idle';
  private client: Client | null = null;
  private transport: ObservedTransport | null = null;
  private readonly inFlight = new Set<AbortController>();
  /** Resource-update listeners by URI: one `resources/subscribe` per URI while any listener is left. */
  private readonly resourceListeners = new Map<string, Set<() => void>>();
  private counters = { calls: 0, failedCalls: 0, protocolErrors: 0 };
  /** Called when the server announces `notifications/tools/list_changed` or reconnects after a failure. */
  onToolsChanged: (() => void) | null = null;
  private starting: Promise<Client> | null = null;
  private failures: number[] = [];
  private restarts = 0;
  private lastError: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** The next health ping while ready (unref'd; cleared on stop and on failure). */
  private healthTimer: NodeJS.Timeout | null = null;
  private generation = 0;
  /** The server's `restart` policy (config/mcp.yaml), with the constructor's override on top. */
  readonly policy: RestartPolicy;

  constructor(
    readonly config: McpServerConfig,
    private readonly log: Logger,
    /** Fields replacing the server's configured policy (tests shorten the backoff). */
    policyOverride: Partial<RestartPolicy> = {},
    /** The clock of the rolling restart window (tests move it instead of waiting minutes). */
    private readonly now: () => number = Date.now,
    /** mcp_calls_total (recorded by the tools), restarts and mcp_server_up (recorded here). */
    readonly metrics: McpMetrics = noopMetrics,
    /** What an isolated server never sees, and where its launcher is (isolation.ts). */
    private readonly isolationHost: McpIsolationHost = NO_HIDDEN,
  ) {
    this.policy = { ...config.restart, ...policyOverride };
    metrics.mcpServerUp(config.id, false);
  }

  status(): ServerStatus {
    return {
      id: this.config.id,
      transport: this.config.transport,
      state: this.state,
      restarts: this.restarts,
      lastError: this.lastError,
      pid: this.transport?.pid ?? null,
      server: this.client?.getServerVersion()?.name ?? null,
      protocolVersion: this.state === 'ready' ? (this.client?.getNegotiatedProtocolVersion() ?? null) : null,
      era: this.state === 'ready' ? (this.client?.getProtocolEra() ?? null) : null,
      counters: { ...this.counters },
    };
  }

  /**
   * What a modern-era server said about itself in `DiscoverResult.instructions` (legacy servers'
   * initialize instructions are not offered: ADR 0051), while connected. Untrusted server text.
   */
  get instructions(): string | null {
    if (this.state !== 'ready' || this.client?.getProtocolEra() !== 'modern') return null;
    const text = this.client.getDiscoverResult()?.instructions;
    return text ? redactCredentials(text, this.config).slice(0, SERVER_NOTES_MAX_CHARS) : null;
  }

  /** The child's pid while it runs (tests use it to SIGKILL the server). */
  get pid(): number | null {
    return this.transport?.pid ?? null;
  }

  /** Starts the server if it is idle; waits for a start in progress; fails fast otherwise. */
  async ready(): Promise<Client> {
    if (this.state === 'ready' && this.client) return this.client;
    if (this.state === 'failed' || this.state === 'stopped')
      throw new McpServerUnavailable(this.config.id, this.lastError ?? this.state);
    if (this.state === 'backoff')
      throw new McpServerUnavailable(this.config.id, `restarting after failure: ${this.lastError ?? 'unknown'}`);
    return this.launch();
  }

  async listTools(): Promise<DiscoveredTool[]> {
    const client = await this.ready();
    const tools: DiscoveredTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.config.startupTimeoutMs });
      for (const t of page.tools) {
        tools.push({
          name: t.name,
          description: t.description ?? '',
          inputSchema: t.inputSchema,
          annotations: { readOnlyHint: t.annotations?.readOnlyHint, destructiveHint: t.annotations?.destructiveHint },
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
    /** The server's `notifications/progress` for this call (the SDK sends a progress token when set). */
    onProgress?: (p: { progress: number; total: number | null; message: string | null }) => void,
  ): Promise<CallOutcome> {
    const generation = this.generation;
    this.counters.calls++;
    const fault = new AbortController();
    this.inFlight.add(fault);
    let result;
    try {
      const client = await this.ready();
      result = await client.callTool(
        { name, arguments: args },
        {
          signal: AbortSignal.any([signal, fault.signal]),
          timeout: timeoutMs,
          ...(onProgress
            ? {
                onprogress: (p: { progress: number; total?: number; message?: string }) =>
                  onProgress({
                    progress: p.progress,
                    total: typeof p.total === 'number' ? p.total : null,
                    message: typeof p.message === 'string' ? redactCredentials(p.message, this.config) : null,
                  }),
              }
            : {}),
        },
      );
    } catch (e) {
      this.counters.failedCalls++;
      if (fault.signal.aborted && fault.signal.reason instanceof McpProtocolFault) throw fault.signal.reason;
      if (e instanceof SdkError && e.code === SdkErrorCode.UnsupportedResultType && /input_required/.test(e.message))
        throw new McpInputRequired(
          `${name}: the server asked for interactive input (resultType input_required), which agent-core does not provide`,
        );
      if (this.config.transport === 'http' && isHttpConnectionFailure(e)) {
        // The server went away or forgot our session (restarted): reconnect with backoff.
        this.lastError = `connection failed: ${(e as Error).message}`.slice(0, 500);
        this.log.warn('mcp http connection failed', { server: this.config.id, error: this.lastError });
        if (generation === this.generation && this.state === 'ready') {
          this.onFailure(generation);
          await this.detach();
        }
        throw new McpServerUnavailable(this.config.id, this.lastError);
      }
      throw e;
    } finally {
      this.inFlight.delete(fault);
    }
    if (result.isError === true) this.counters.failedCalls++;
    return {
      isError: result.isError === true,
      content: Array.isArray(result.content) ? result.content : [],
      structuredContent:
        result.structuredContent && typeof result.structuredContent === 'object'
          ? (result.structuredContent as Record<string, unknown>)
          : null,
    };
  }

  /** Whether the connected server advertises resources (`mcp.<server>.read_resource` is offered then). */
  async hasResources(): Promise<boolean> {
    const client = await this.ready();
    return client.getServerCapabilities()?.resources !== undefined;
  }

  /** Reads one resource; its contents as the server sent them (text, or base64 blob). */
  async readResource(uri: string, signal: AbortSignal, timeoutMs: number): Promise<unknown[]> {
    this.counters.calls++;
    try {
      const client = await this.ready();
      const r = await client.readResource({ uri }, { signal, timeout: timeoutMs });
      return Array.isArray(r.contents) ? r.contents : [];
    } catch (e) {
      this.counters.failedCalls++;
      throw e;
    }
  }

  /** Whether the connected server offers `resources/subscribe` (`mcp.<server>.watch_resource` is offered then). */
  async hasResourceSubscriptions(): Promise<boolean> {
    const client = await this.ready();
    return client.getServerCapabilities()?.resources?.subscribe === true;
  }

  /**
   * Calls `onUpdated` on each `notifications/resources/updated` for `uri` until the returned
   * function is called. The first listener of a URI sends `resources/subscribe`, the last one to
   * leave `resources/unsubscribe`; a reconnected server is subscribed again (a new process knows
   * nothing of the old one's subscriptions).
   */
  async subscribeResource(uri: string, onUpdated: () => void, timeoutMs: number): Promise<() => Promise<void>> {
    const client = await this.ready();
    let listeners = this.resourceListeners.get(uri);
    if (!listeners) {
      listeners = new Set();
      this.resourceListeners.set(uri, listeners);
      try {
        await client.subscribeResource({ uri }, { timeout: timeoutMs });
      } catch (e) {
        if (listeners.size === 0) this.resourceListeners.delete(uri);
        throw e;
      }
    }
    listeners.add(onUpdated);
    const own = listeners;
    return async () => {
      if (!own.delete(onUpdated) || own.size > 0 || this.resourceListeners.get(uri) !== own) return;
      this.resourceListeners.delete(uri);
      if (this.state === 'ready' && this.client)
        await this.client.unsubscribeResource({ uri }, { timeout: timeoutMs }).catch(() => undefined);
    };
  }

  /** The server's prompts (name, description, argument names), for read-only skills. */
  async listPrompts(): Promise<
    { name: string; description: string; arguments: { name: string; required: boolean }[] }[]
  > {
    const client = await this.ready();
    if (client.getServerCapabilities()?.prompts === undefined) return [];
    const r = await client.listPrompts(undefined, { timeout: this.config.startupTimeoutMs });
    return r.prompts.map((p) => ({
      name: p.name,
      description: p.description ?? '',
      arguments: (p.arguments ?? []).map((a) => ({ name: a.name, required: a.required === true })),
    }));
  }

  /** One prompt's messages rendered as text (what a skill load brings into context). */
  async getPrompt(name: string, args: Record<string, string>, timeoutMs: number): Promise<string> {
    const client = await this.ready();
    const r = await client.getPrompt({ name, arguments: args }, { timeout: timeoutMs });
    return r.messages
      .map((m) => `${m.role}: ${m.content.type === 'text' ? m.content.text : `[${m.content.type}]`}`)
      .join('\n\n');
  }

  /** Operator start: a stopped or failed server starts again with a fresh restart window. */
  async start(): Promise<void> {
    if (this.state === 'ready' || this.state === 'starting') {
      await this.ready();
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.failures = [];
    this.state = 'idle';
    await this.ready();
    this.onToolsChanged?.();
  }

  /** Operator restart: stop (if running) and start with a fresh restart window. */
  async restart(): Promise<void> {
    await this.stop();
    this.restarts++;
    this.metrics.mcpServerRestarted(this.config.id);
    await this.start();
  }

  /** Stops the server (platform shutdown or operator stop); calls then fail fast until `start`. */
  async stop(): Promise<void> {
    this.state = 'stopped';
    this.metrics.mcpServerUp(this.config.id, false);
    this.generation++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.clearHealth();
    await this.detach();
  }

  private launch(): Promise<Client> {
    if (this.starting) return this.starting;
    this.state = 'starting';
    const generation = ++this.generation;
    this.starting = this.connect(generation).finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private createTransport(): ChildStdioTransport | StreamableHTTPClientTransport {
    if (this.config.transport === 'http') {
      const auth = this.config.auth;
      const serverId = this.config.id;
      // The credential is read from the environment at each request and only ever put in a header.
      const authorizedFetch = async (url: string | URL, init?: RequestInit): Promise<Response> => {
        if (!auth) return fetch(url, init);
        const value = process.env[auth.env];
        if (!value) throw new Error(`auth reference ${auth.env} of MCP server ${serverId} is not set`);
        const headers = new Headers(init?.headers);
        headers.set(auth.header, auth.scheme ? `${auth.scheme} ${value}` : value);
        return fetch(url, { ...init, headers });
      };
      return new StreamableHTTPClientTransport(new URL(this.config.url!), { fetch: authorizedFetch });
    }
    // The child's whole environment: the allowlisted variables, nothing else of this process's.
    const env: Record<string, string> = {};
    for (const key of this.config.envAllowlist) {
      const value = process.env[key];
      if (value !== undefined) env[key] = value;
    }
    // `isolation: namespace` spawns the sandbox's bubblewrap launcher instead of the command itself.
    const transport = new ChildStdioTransport(stdioLaunch(this.config, env, this.isolationHost));
    transport.stderr.on('data', (chunk: Buffer) =>
      this.log.debug('mcp server stderr', {
        server: this.config.id,
        line: redactCredentials(chunk.toString('utf8'), this.config).slice(0, 500),
      }),
    );
    return transport;
  }

  private async connect(generation: number): Promise<Client> {
    let client: Client;
    try {
      client = await this.open(generation, false).catch(async (e: unknown) => {
        // §3.1.3: an unanswered probe is no evidence of a modern server; the SDK reads silence on a
        // transport it does not know as stdio as an outage, so the fallback is made here, on a fresh
        // connection told the verdict (the SDK's `prior: legacy`): the plain initialize handshake.
        if (this.config.protocolEra !== 'auto' || !isProbeSilence(e) || generation !== this.generation) throw e;
        this.log.info('mcp era probe unanswered, using the initialize handshake', { server: this.config.id });
        await this.detach();
        return this.open(generation, true);
      });
    } catch (e) {
      if (e instanceof McpServerUnavailable) throw e; // cannot be launched here: marked failed already
      if (generation === this.generation) {
        this.lastError = `start failed: ${redactCredentials((e as Error).message, this.config)}`.slice(0, 500);
        this.log.error('mcp server failed to start', { server: this.config.id, error: this.lastError });
        this.onFailure(generation); // bumps the generation first, so detaching is not counted again
      }
      await this.detach();
      throw new McpServerUnavailable(this.config.id, this.lastError ?? 'start failed');
    }
    const transport = this.transport!;
    if (generation !== this.generation) {
      await client.close().catch(() => undefined);
      throw new McpServerUnavailable(this.config.id, 'stopped');
    }
    this.client = client;
    this.state = 'ready';
    this.metrics.mcpServerUp(this.config.id, true);
    this.log.info('mcp server ready', {
      server: this.config.id,
      transport: this.config.transport,
      pid: transport.pid,
      era: client.getProtocolEra(),
      protocolVersion: client.getNegotiatedProtocolVersion(),
      restarts: this.restarts,
    });
    this.scheduleHealth(generation, client);
    this.resubscribe(client);
    return client;
  }

  /**
   * One connection attempt: a fresh transport and client, connected with the era settings of
   * `clientOptions` (or, `legacyVerdict`, straight to the initialize handshake). Throws what the
   * SDK threw; a server that cannot be launched here at all is marked failed (no restart helps).
   */
  private async open(generation: number, legacyVerdict: boolean): Promise<Client> {
    let inner: ChildStdioTransport | StreamableHTTPClientTransport;
    try {
      inner = this.createTransport();
    } catch (e) {
      this.state = 'failed';
      this.lastError = (e as Error).message;
      this.log.error('mcp server marked failed', { server: this.config.id, error: this.lastError });
      throw new McpServerUnavailable(this.config.id, this.lastError);
    }
    const transport = new ObservedTransport(inner, this.config.protocolVersion, (error) =>
      this.onProtocolError(generation, error),
    );
    const client = new Client({ name: 'agent-core', version: '0.1.0' }, clientOptions(this.config));
    client.onerror = (e) =>
      this.log.warn('mcp transport error', {
        server: this.config.id,
        error: redactCredentials(e.message, this.config).slice(0, 500),
      });
    client.onclose = () => this.onClosed(generation);
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      if (generation !== this.generation) return;
      this.log.info('mcp tools list changed', { server: this.config.id });
      this.onToolsChanged?.();
    });
    client.setNotificationHandler('notifications/resources/updated', (n) => {
      if (generation !== this.generation) return;
      for (const listener of this.resourceListeners.get(n.params.uri) ?? []) listener();
    });
    this.transport = transport;
    await client.connect(transport, {
      timeout: this.config.startupTimeoutMs,
      ...(legacyVerdict ? { prior: { kind: 'legacy' as const } } : {}),
    });
    return client;
  }

  /** After a reconnect: the URIs someone still listens to are subscribed again on the new connection. */
  private resubscribe(client: Client): void {
    for (const uri of this.resourceListeners.keys())
      client.subscribeResource({ uri }, { timeout: this.config.startupTimeoutMs }).catch((e: unknown) =>
        this.log.warn('mcp resource resubscription failed', {
          server: this.config.id,
          error: redactCredentials(String((e as Error).message ?? e), this.config).slice(0, 500),
        }),
      );
  }

  /**
   * Health check while ready: every `healthIntervalMs` one `ping` bounded by `healthTimeoutMs`. A ping
   * that fails or times out (a hung or stopped child, a dead HTTP server) is treated like a crash:
   * the connection is detached and the server goes through the same restart-with-backoff path.
   */
  private scheduleHealth(generation: number, client: Client): void {
    this.clearHealth();
    if (this.config.healthIntervalMs <= 0) return;
    this.healthTimer = setTimeout(() => {
      this.healthTimer = null;
      if (generation !== this.generation || this.state !== 'ready') return;
      client.ping({ timeout: this.config.healthTimeoutMs }).then(
        () => {
          if (generation === this.generation && this.state === 'ready') this.scheduleHealth(generation, client);
        },
        (e: unknown) => void this.onHealthFailure(generation, e),
      );
    }, this.config.healthIntervalMs);
    this.healthTimer.unref();
  }

  private clearHealth(): void {
    if (this.healthTimer) clearTimeout(this.healthTimer);
    this.healthTimer = null;
  }

  private async onHealthFailure(generation: number, e: unknown): Promise<void> {
    if (generation !== this.generation || this.state !== 'ready') return;
    const reason = e instanceof Error ? e.message : String(e);
    this.lastError = `health check failed: ${redactCredentials(reason, this.config)}`.slice(0, 500);
    this.log.warn('mcp health check failed', { server: this.config.id, error: this.lastError });
    this.onFailure(generation); // bumps the generation: the transport is stale, its late callbacks are ignored
    await this.detach();
  }

  /**
   * A message the server sent could not be parsed as JSON-RPC (or had the wrong shape): logged, and
   * every call in flight on this connection fails as a protocol error instead of waiting for a
   * reply that will never be matched. The connection itself stays up.
   */
  private onProtocolError(generation: number, error: Error): void {
    if (generation !== this.generation) return;
    this.counters.protocolErrors++;
    const message = `invalid message from server: ${error.message}`.slice(0, 500);
    this.log.error('mcp protocol error', { server: this.config.id, error: message });
    for (const c of this.inFlight) c.abort(new McpProtocolFault(message));
  }

  private onClosed(generation: number): void {
    if (generation !== this.generation || this.state === 'stopped') return; // detached on purpose
    if (this.state === 'starting') return; // a failed connect: its own catch records the reason
    const exit = this.transport?.exit ?? null;
    const clean = exit !== null && exit.code === 0;
    this.lastError =
      this.config.transport === 'http'
        ? 'connection closed'
        : exit === null
          ? 'server process exited'
          : `server process exited (${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`})`;
    this.log.warn('mcp server exited', { server: this.config.id, clean });
    this.client = null;
    this.transport = null;
    this.onFailure(generation, clean);
  }

  /**
   * The server went down (`clean`: a stdio child exited with code 0 on its own). Per the strategy
   * it is restarted with backoff, left stopped (`on_failure` after a clean exit), or marked failed
   * (`never`, or more than `maxRestarts` failures inside the rolling window).
   */
  private onFailure(generation: number, clean = false): void {
    if (generation !== this.generation || this.state === 'stopped') return;
    this.clearHealth();
    this.generation++; // stale transports are detached: their late callbacks are ignored
    this.metrics.mcpServerUp(this.config.id, false);
    const { strategy } = this.policy;
    if (strategy === 'never' || (clean && strategy === 'on_failure')) {
      this.state = clean ? 'stopped' : 'failed';
      this.lastError = `${this.lastError ?? 'exited'}; restart strategy ${strategy} does not restart it`;
      this.log[clean ? 'warn' : 'error'](clean ? 'mcp server stopped' : 'mcp server marked failed', {
        server: this.config.id,
        error: this.lastError,
      });
      return;
    }
    const t = this.now();
    this.failures = [...this.failures.filter((f) => t - f < this.policy.windowMs), t];
    if (this.failures.length > this.policy.maxRestarts) {
      this.state = 'failed';
      this.lastError = `gave up after ${this.policy.maxRestarts} restarts in ${this.policy.windowMs / 1000} s; last error: ${this.lastError}`;
      this.log.error('mcp server marked failed', { server: this.config.id, error: this.lastError });
      return;
    }
    const delay = Math.min(this.policy.baseDelayMs * 2 ** (this.failures.length - 1), this.policy.maxDelayMs);
    this.state = 'backoff';
    this.log.warn('mcp server restart scheduled', {
      server: this.config.id,
      delayMs: delay,
      attempt: this.failures.length,
    });
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.state !== 'backoff') return;
      this.restarts++;
      this.metrics.mcpServerRestarted(this.config.id);
      this.launch().then(
        () => this.onToolsChanged?.(), // re-discover: the restarted server may offer other tools
        () => undefined, // a failed restart schedules the next one itself
      );
    }, delay);
    this.timer.unref();
  }

  private async detach(): Promise<void> {
    const client = this.client;
    const transport = this.transport;
    this.client = null;
    this.transport = null;
    try {
      if (client) await client.close();
      else if (transport) await transport.close();
    } catch {
      // already gone
    }
  }
}

/**
 * The era settings of a server's client (ClotoCore §3.1.3, ADR 0051), all through the SDK's public
 * options: `auto` probes with `server/discover` (at most 8 s, bounded by the startup timeout) and
 * falls back to `initialize` on anything that is not positive evidence of a modern server; `modern`
 * pins the 2026-07-28 revision (no fallback); `legacy` is the plain handshake. `input_required` is
 * never fulfilled (agent-core has no elicitation or sampling flow): it surfaces as a typed error.
 */
function clientOptions(config: McpServerConfig): ConstructorParameters<typeof Client>[1] {
  const probe = { timeoutMs: Math.min(ERA_PROBE_TIMEOUT_MS, config.startupTimeoutMs) };
  const versionNegotiation =
    config.protocolEra === 'legacy'
      ? { mode: 'legacy' as const }
      : config.protocolEra === 'modern'
        ? { mode: { pin: MODERN_PROTOCOL_VERSION }, probe }
        : { mode: 'auto' as const, probe };
  return { versionNegotiation, inputRequired: { autoFulfill: false } };
}

/** The SDK's verdict that the `server/discover` probe got no answer within its window (`probe.timeoutMs`). */
function isProbeSilence(e: unknown): boolean {
  return e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout && /probe/i.test(e.message);
}

/** The stateless revision `protocol_era: modern` pins. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/**
 * A Streamable HTTP failure that means "reconnect": the server is unreachable (fetch failed), or it
 * answered 404/400 for our session (it restarted and forgot the session). JSON-RPC errors the server
 * returns and timeouts are not.
 */
function isHttpConnectionFailure(e: unknown): boolean {
  const err = e as { name?: string; code?: unknown; message?: string; cause?: unknown };
  const message = String(err?.message ?? '');
  if (/fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|other side closed/i.test(message)) return true;
  if (/auth reference .* is not set/.test(message)) return true;
  if (/Streamable HTTP error/.test(message) && (err.code === 404 || err.code === 400 || err.code === 401)) return true;
  return /No valid session|Session not found/i.test(message);
}
