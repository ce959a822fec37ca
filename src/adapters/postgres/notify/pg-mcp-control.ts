import { randomUUID } from 'node:crypto';
import createSubscriber, { type Subscriber } from 'pg-listen';
import type { Logger } from '../../../ports/logger';
import type { Queryable } from '../database';

/** The channel operator MCP actions are broadcast on (docs/mcp.md "Operations"). */
export const MCP_CONTROL_CHANNEL = 'agent_mcp_control';
/** The channel each process acknowledges an action on, once it has applied it. */
export const MCP_CONTROL_ACK_CHANNEL = 'agent_mcp_control_ack';
/**
 * The `application_name` prefix of every listening connection: PostgreSQL's own `pg_stat_activity`
 * is then the list of live processes that will apply an action (a process that dies drops its
 * connection, so it is never waited for).
 */
export const MCP_CONTROL_APPLICATION_PREFIX = 'agent-mcp-control:';

export type McpControlAction = 'start' | 'stop' | 'restart';
/**
 * `sync`: the server's entry changed in `mcp_servers` (added, updated or removed through the API,
 * ADR 0052); each process re-reads it and starts, replaces or stops its own supervisor.
 */
export type McpControlMessage = McpControlAction | 'sync';
const ACTIONS: readonly string[] = ['start', 'stop', 'restart'];

/** What a process applies an operator action to: its own supervisors (`McpHub`). */
export interface McpControlTarget {
  has(serverId: string): boolean;
  control(serverId: string, action: McpControlAction): Promise<{ readonly state: string }>;
  /** Applies the server's current managed entry here; the state is `removed` when it no longer exists. */
  sync?(serverId: string): Promise<{ readonly state: string }>;
}

/** One other process's answer to an operator action: what its supervisor of the server is now. */
export interface McpControlAck {
  /** The process's control origin (its `application_name` suffix). */
  readonly process: string;
  /** What the process runs as (`api`, `worker`, `cli`). */
  readonly service: string;
  readonly pid: number;
  /** Its supervisor's state after the action, or null when the action failed there. */
  readonly state: string | null;
  readonly error: string | null;
}

/** What became of an action in the other processes: who applied it, and who did not answer in time. */
export interface McpBroadcastResult {
  readonly acknowledged: readonly McpControlAck[];
  /** Origins of live listening processes that had not answered when the wait ended. */
  readonly unacknowledged: readonly string[];
}

interface PendingBroadcast {
  readonly expected: Set<string>;
  readonly acks: McpControlAck[];
  readonly done: () => void;
}

/**
 * Operator start/stop/restart reach every process: the process that took the request applies it to
 * its own supervisors and NOTIFYs `agent_mcp_control` with `{origin, request, server, action}`;
 * every other process listening (API, workers) applies it to its own and answers on
 * `agent_mcp_control_ack` with its supervisor's state. The sender reads who is listening from
 * `pg_stat_activity` (each listening connection is named `agent-mcp-control:<origin>`) and waits
 * until each of them has answered, or until the acknowledgement timeout, so the operator learns
 * which processes applied the action and which did not answer (ADR 0021). A process ignores its own
 * notices (it has already acted). A notice sent while a listener is disconnected is lost; that
 * process shows as unacknowledged, and its servers keep running under their own restart policy.
 */
export class PgMcpControl {
  /** This process's (platform's) origin token. */
  readonly origin = randomUUID();
  private sub: Subscriber | null = null;
  private readonly pending = new Map<string, PendingBroadcast>();

  constructor(
    private readonly url: string,
    private readonly db: Queryable,
    private readonly log: Logger,
    private readonly opts: { readonly service: string; readonly ackTimeoutMs: number } = {
      service: 'process',
      ackTimeoutMs: 10_000,
    },
  ) {}

  /** Opens the LISTEN connection and applies other processes' actions to `target`. */
  async listen(target: McpControlTarget): Promise<void> {
    const sub = createSubscriber(
      { connectionString: this.url, application_name: `${MCP_CONTROL_APPLICATION_PREFIX}${this.origin}` },
      { retryInterval: 500, retryLimit: Infinity, retryTimeout: Infinity, parse: (s: string) => s },
    );
    sub.events.on('error', (e: Error) =>
      this.log.error('mcp control LISTEN connection failed permanently', { error: e.message }),
    );
    sub.notifications.on(MCP_CONTROL_CHANNEL, (raw: unknown) => void this.apply(target, raw));
    sub.notifications.on(MCP_CONTROL_ACK_CHANNEL, (raw: unknown) => this.acknowledged(raw));
    await sub.connect();
    await sub.listenTo(MCP_CONTROL_CHANNEL);
    await sub.listenTo(MCP_CONTROL_ACK_CHANNEL);
    this.sub = sub;
  }

  /**
   * Tells every other process to apply `action` to its supervisor of `serverId`, and waits (at most
   * the acknowledgement timeout) until each live listening process has answered.
   */
  async broadcast(serverId: string, action: McpControlMessage): Promise<McpBroadcastResult> {
    const request = randomUUID();
    const peers = await this.listeningPeers();
    let finish = (): void => undefined;
    const entry: PendingBroadcast = { expected: new Set(peers), acks: [], done: () => finish() };
    // Only a listening process hears the answers; without a LISTEN there is nothing to wait for.
    const wait =
      this.sub && peers.length > 0
        ? new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, this.opts.ackTimeoutMs);
            timer.unref();
            finish = () => {
              clearTimeout(timer);
              resolve();
            };
          })
        : Promise.resolve();
    this.pending.set(request, entry);
    try {
      const payload = JSON.stringify({ origin: this.origin, request, server: serverId, action });
      await this.db.query('SELECT pg_notify($1, $2)', [MCP_CONTROL_CHANNEL, payload]);
      await wait;
    } finally {
      this.pending.delete(request);
    }
    return { acknowledged: entry.acks, unacknowledged: [...entry.expected] };
  }

  async close(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    for (const p of this.pending.values()) p.done();
    if (sub) await sub.close().catch(() => undefined);
  }

  /** Origins of the other processes listening for operator actions on this database, now. */
  private async listeningPeers(): Promise<string[]> {
    const r = await this.db.query<{ name: string }>(
      `SELECT application_name AS name FROM pg_stat_activity
        WHERE datname = current_database() AND starts_with(application_name, $1)`,
      [MCP_CONTROL_APPLICATION_PREFIX],
    );
    const mine = `${MCP_CONTROL_APPLICATION_PREFIX}${this.origin}`;
    return r.rows.filter((x) => x.name !== mine).map((x) => x.name.slice(MCP_CONTROL_APPLICATION_PREFIX.length));
  }

  private acknowledged(raw: unknown): void {
    let ack: Partial<McpControlAck> & { request?: unknown };
    try {
      ack = JSON.parse(String(raw)) as typeof ack;
    } catch {
      return;
    }
    const entry = typeof ack.request === 'string' ? this.pending.get(ack.request) : undefined;
    if (!entry || typeof ack.process !== 'string') return; // another process's request, or garbled
    entry.acks.push({
      process: ack.process,
      service: String(ack.service ?? 'process'),
      pid: Number(ack.pid ?? 0),
      state: typeof ack.state === 'string' ? ack.state : null,
      error: typeof ack.error === 'string' ? ack.error : null,
    });
    entry.expected.delete(ack.process);
    if (entry.expected.size === 0) entry.done();
  }

  private async apply(target: McpControlTarget, raw: unknown): Promise<void> {
    let notice: { origin?: unknown; request?: unknown; server?: unknown; action?: unknown };
    try {
      notice = JSON.parse(String(raw)) as typeof notice;
    } catch {
      this.log.warn('mcp control notice ignored: not JSON');
      return;
    }
    if (notice.origin === this.origin) return;
    const server = typeof notice.server === 'string' ? notice.server : '';
    const action = typeof notice.action === 'string' ? notice.action : '';
    const sync = action === 'sync' && target.sync !== undefined && /^[a-z][a-z0-9_]{0,31}$/.test(server);
    if (!sync && (!ACTIONS.includes(action) || !target.has(server))) {
      this.log.warn('mcp control notice ignored', { server, action });
      return;
    }
    this.log.info('mcp operator action from another process', { server, action });
    let state: string | null = null;
    let error: string | null = null;
    try {
      state = sync
        ? (await target.sync!(server)).state
        : (await target.control(server, action as McpControlAction)).state;
    } catch (e) {
      error = e instanceof Error ? e.message.slice(0, 500) : String(e).slice(0, 500);
      this.log.warn('mcp operator action from another process failed', { server, action, error });
    }
    if (typeof notice.request !== 'string') return;
    const ack = {
      request: notice.request,
      process: this.origin,
      service: this.opts.service,
      pid: process.pid,
      state,
      error,
    };
    await this.db
      .query('SELECT pg_notify($1, $2)', [MCP_CONTROL_ACK_CHANNEL, JSON.stringify(ack)])
      .catch((e: unknown) => this.log.warn('mcp operator action not acknowledged', { server, error: String(e) }));
  }
}
