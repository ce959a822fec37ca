import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Logger } from '../../ports/logger';
import type { McpServerConfig } from './mcp-config';

/** Restart policy (ClotoCore §3.1.2 semantics): restart only on failure, base 1 s doubling, capped 30 s. */
export interface RestartPolicy {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxRestarts: number;
  readonly windowMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  maxRestarts: 5,
  windowMs: 300_000,
};

export type ServerState = 'idle' | 'starting' | 'ready' | 'backoff' | 'failed' | 'stopped';

export interface ServerStatus {
  readonly id: string;
  readonly state: ServerState;
  readonly restarts: number;
  readonly lastError: string | null;
  readonly pid: number | null;
  /** The server's self-reported name while connected. */
  readonly server: string | null;
}

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
  private transport: StdioClientTransport | null = null;
  private starting: Promise<Client> | null = null;
  private failures: number[] = [];
  private restarts = 0;
  private lastError: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private generation = 0;

  constructor(
    readonly config: McpServerConfig,
    private readonly log: Logger,
    private readonly policy: RestartPolicy = DEFAULT_RESTART_POLICY,
    private readonly now: () => number = Date.now,
  ) {}

  status(): ServerStatus {
    return {
      id: this.config.id,
      state: this.state,
      restarts: this.restarts,
      lastError: this.lastError,
      pid: this.transport?.pid ?? null,
      server: this.client?.getServerVersion()?.name ?? null,
    };
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
    return this.start();
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
  ): Promise<CallOutcome> {
    const client = await this.ready();
    const result = await client.callTool({ name, arguments: args }, undefined, { signal, timeout: timeoutMs });
    return {
      isError: result.isError === true,
      content: Array.isArray(result.content) ? (result.content as unknown[]) : [],
      structuredContent:
        result.structuredContent && typeof result.structuredContent === 'object'
          ? (result.structuredContent as Record<string, unknown>)
          : null,
    };
  }

  /** Stops the server for good (platform shutdown). */
  async stop(): Promise<void> {
    this.state = 'stopped';
    this.generation++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.detach();
  }

  private start(): Promise<Client> {
    if (this.starting) return this.starting;
    this.state = 'starting';
    const generation = ++this.generation;
    this.starting = this.connect(generation).finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async connect(generation: number): Promise<Client> {
    const env: Record<string, string | undefined> = {};
    // The SDK merges its default environment in; blank those keys out unless allowlisted.
    for (const key of Object.keys(getDefaultEnvironment())) env[key] = undefined;
    for (const key of this.config.envAllowlist) env[key] = process.env[key];
    const transport = new StdioClientTransport({
      command: this.config.command,
      args: [...this.config.args],
      cwd: this.config.cwd ?? undefined,
      env: env as Record<string, string>,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) =>
      this.log.debug('mcp server stderr', { server: this.config.id, line: chunk.toString('utf8').slice(0, 500) }),
    );
    const client = new Client({ name: 'agent-core', version: '0.1.0' });
    client.onerror = (e) => this.log.warn('mcp protocol error', { server: this.config.id, error: e.message });
    client.onclose = () => this.onClosed(generation);
    this.transport = transport;
    try {
      await client.connect(transport, { timeout: this.config.startupTimeoutMs });
    } catch (e) {
      if (generation === this.generation) {
        this.lastError = `start failed: ${(e as Error).message}`;
        this.log.error('mcp server failed to start', { server: this.config.id, error: this.lastError });
        this.onFailure(generation); // bumps the generation first, so detaching is not counted again
      }
      await this.detach();
      throw new McpServerUnavailable(this.config.id, this.lastError ?? 'start failed');
    }
    if (generation !== this.generation) {
      await client.close().catch(() => undefined);
      throw new McpServerUnavailable(this.config.id, 'stopped');
    }
    this.client = client;
    this.state = 'ready';
    this.log.info('mcp server ready', { server: this.config.id, pid: transport.pid, restarts: this.restarts });
    return client;
  }

  private onClosed(generation: number): void {
    if (generation !== this.generation || this.state === 'stopped') return; // detached on purpose
    this.lastError = 'server process exited';
    this.log.warn('mcp server exited', { server: this.config.id });
    this.client = null;
    this.transport = null;
    this.onFailure(generation);
  }

  private onFailure(generation: number): void {
    if (generation !== this.generation || this.state === 'stopped') return;
    this.generation++; // stale transports are detached: their late callbacks are ignored
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
      this.start().catch(() => undefined); // a failed restart schedules the next one itself
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
