import { randomUUID } from 'node:crypto';
import createSubscriber, { type Subscriber } from 'pg-listen';
import type { Logger } from '../../../ports/logger';
import type { Queryable } from '../database';

/** The channel operator MCP actions are broadcast on (docs/mcp.md "Operations"). */
export const MCP_CONTROL_CHANNEL = 'agent_mcp_control';

export type McpControlAction = 'start' | 'stop' | 'restart';
const ACTIONS: readonly string[] = ['start', 'stop', 'restart'];

/** What a process applies an operator action to: its own supervisors (`McpHub`). */
export interface McpControlTarget {
  has(serverId: string): boolean;
  control(serverId: string, action: McpControlAction): Promise<unknown>;
}

/**
 * Operator start/stop/restart reach every process: the process that took the request applies it to
 * its own supervisors and NOTIFYs `agent_mcp_control` with `{origin, server, action}`; every other
 * process listening (API, workers) applies it to its own. A process ignores its own notices (it has
 * already acted). A notice sent while a listener is disconnected is lost; that process's servers keep
 * running under their own restart policy.
 */
export class PgMcpControl {
  /** This process's (platform's) origin token. */
  readonly origin = randomUUID();
  private sub: Subscriber | null = null;

  constructor(
    private readonly url: string,
    private readonly db: Queryable,
    private readonly log: Logger,
  ) {}

  /** Opens the LISTEN connection and applies other processes' actions to `target`. */
  async listen(target: McpControlTarget): Promise<void> {
    const sub = createSubscriber(
      { connectionString: this.url },
      { retryInterval: 500, retryLimit: Infinity, retryTimeout: Infinity, parse: (s: string) => s },
    );
    sub.events.on('error', (e: Error) =>
      this.log.error('mcp control LISTEN connection failed permanently', { error: e.message }),
    );
    sub.notifications.on(MCP_CONTROL_CHANNEL, (raw: unknown) => void this.apply(target, raw));
    await sub.connect();
    await sub.listenTo(MCP_CONTROL_CHANNEL);
    this.sub = sub;
  }

  /** Tells every other process to apply `action` to its supervisor of `serverId`. */
  async broadcast(serverId: string, action: McpControlAction): Promise<void> {
    const payload = JSON.stringify({ origin: this.origin, server: serverId, action });
    await this.db.query('SELECT pg_notify($1, $2)', [MCP_CONTROL_CHANNEL, payload]);
  }

  async close(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (sub) await sub.close().catch(() => undefined);
  }

  private async apply(target: McpControlTarget, raw: unknown): Promise<void> {
    let notice: { origin?: unknown; server?: unknown; action?: unknown };
    try {
      notice = JSON.parse(String(raw)) as typeof notice;
    } catch {
      this.log.warn('mcp control notice ignored: not JSON');
      return;
    }
    if (notice.origin === this.origin) return;
    const server = typeof notice.server === 'string' ? notice.server : '';
    const action = typeof notice.action === 'string' ? notice.action : '';
    if (!ACTIONS.includes(action) || !target.has(server)) {
      this.log.warn('mcp control notice ignored', { server, action });
      return;
    }
    this.log.info('mcp operator action from another process', { server, action });
    try {
      await target.control(server, action as McpControlAction);
    } catch (e) {
      this.log.warn('mcp operator action from another process failed', { server, action, error: String(e) });
    }
  }
}
