import { combine, eventsOrThrow } from '../../domain/deciders/decider';
import {
  mcpServerDecider,
  type McpServerCommand,
  type McpServerEntry,
  type McpServersState,
  type ManagedServerState,
} from '../../domain/deciders/mcp-server';
import { sessionDecider } from '../../domain/deciders/session';
import type { Principal } from '../../domain/principal';
import { stableUuidOf } from '../../domain/stable-id';
import type { McpServerChange, McpServerLog } from '../../ports/mcp-server-log';
import type { Database, Queryable } from './database';
import type { PgAppender } from './event-store/pg-appender';

/** The platform's MCP server audit session: one stream for every server change (ADR 0052). */
export const MCP_SERVER_AUDIT_SESSION_ID = stableUuidOf('mcp-server-audit');
const AUDIT_PRINCIPAL = 'system:mcp-server-audit';

/** `mcp_servers` as the decider's state: every server the log names (removed ones too). */
export async function readMcpServersState(q: Queryable): Promise<McpServersState> {
  const rows = await q.query<{
    server_id: string;
    status: 'active' | 'removed';
    origin: 'yaml' | 'api';
    entry: McpServerEntry | null;
    revision: number;
  }>('SELECT server_id, status, origin, entry, revision FROM mcp_servers ORDER BY server_id');
  const servers: Record<string, ManagedServerState> = {};
  for (const r of rows.rows)
    servers[r.server_id] = { status: r.status, origin: r.origin, entry: r.entry, revision: r.revision };
  return { servers };
}

/**
 * MCP servers managed at run time (docs/mcp.md "Servers managed at run time"): each change is one
 * transaction that decides `mcp.server.added|updated|removed` against the state folded into
 * `mcp_servers` (read under the audit session's advisory lock) and appends it; the inline
 * projection writes the row.
 */
export class PgMcpServers implements McpServerLog {
  constructor(
    private readonly db: Database,
    private readonly appender: PgAppender,
  ) {}

  /** Every server the log names (removed ones with status `removed`). */
  state(q: Queryable = this.db): Promise<McpServersState> {
    return readMcpServersState(q);
  }

  /** Decides and appends one change; refusals (409 duplicate, 404 unknown) write nothing. */
  async apply(principal: Principal, change: McpServerChange, seeded: McpServerEntry | null): Promise<boolean> {
    const actor = { actorType: 'admin' as const, actorId: principal.principalId };
    const base = { actor, serverId: change.serverId, seeded };
    const cmd: McpServerCommand =
      change.kind === 'add'
        ? { ...base, kind: 'AddMcpServer', entry: change.entry }
        : change.kind === 'update'
          ? { ...base, kind: 'UpdateMcpServer', entry: change.entry }
          : { ...base, kind: 'RemoveMcpServer' };
    return this.db.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [MCP_SERVER_AUDIT_SESSION_ID]);
      const session = (
        await client.query<{ tenant_id: string }>('SELECT tenant_id FROM sessions WHERE id = $1', [
          MCP_SERVER_AUDIT_SESSION_ID,
        ])
      ).rows[0];
      const decided = mcpServerDecider.decide(cmd, await this.state(client));
      const events = eventsOrThrow(session ? decided : combine(this.createAudit(actor), decided));
      if (!events.some((e) => e.type.startsWith('mcp.server.'))) return false;
      await this.appender.appendIn(client, {
        sessionId: MCP_SERVER_AUDIT_SESSION_ID,
        tenantId: session?.tenant_id ?? principal.tenantId,
        events,
      });
      return true;
    });
  }

  private createAudit(actor: { actorType: 'admin'; actorId: string }) {
    return sessionDecider.decide(
      {
        kind: 'CreateSession',
        actor,
        agentId: AUDIT_PRINCIPAL,
        agentVersion: 1,
        principalId: AUDIT_PRINCIPAL,
        title: 'MCP server audit',
        metadata: { audit: 'mcp_servers' },
      },
      sessionDecider.initialState(),
    );
  }
}
