import type { StoredEvent } from '../events/payloads';
import { stableUuidOf } from '../stable-id';
import type { Projection, Row } from './projection';

/** The row key of a managed MCP server: a uuid derived from its id alone (ADR 0052). */
export const mcpServerRowId = (serverId: string): string => stableUuidOf(`mcp-server\u0000${serverId}`);

/**
 * mcp_servers: one row per MCP server the API has added, changed or removed (ADR 0052), from the
 * platform's MCP server audit session. A removed server keeps its row (status `removed`, no entry),
 * which is how a removal of a server config/mcp.yaml seeds is honoured at the next start.
 */
export const mcpServerProjection: Projection = {
  name: 'mcp_servers',
  table: 'mcp_servers',
  version: 1,
  keyColumn: 'id',
  columns: [
    'id',
    'session_id',
    'tenant_id',
    'server_id',
    'status',
    'origin',
    'entry',
    'revision',
    'updated_by',
    'created_at',
    'updated_at',
  ],
  keyOf: (e) => (e.type.startsWith('mcp.server.') ? mcpServerRowId((e.data as { serverId: string }).serverId) : null),
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type !== 'mcp.server.added' && e.type !== 'mcp.server.updated' && e.type !== 'mcp.server.removed') return row;
    const base: Row = row ?? {
      id: mcpServerRowId(e.data.serverId),
      session_id: e.sessionId,
      tenant_id: e.tenantId,
      server_id: e.data.serverId,
      created_at: e.createdAt,
    };
    const removed = e.type === 'mcp.server.removed';
    return {
      ...base,
      status: removed ? 'removed' : 'active',
      origin: e.type === 'mcp.server.added' ? (row?.origin ?? 'api') : e.data.origin,
      entry: removed ? null : e.data.entry,
      revision: e.data.revision,
      updated_by: e.actorId,
      updated_at: e.createdAt,
    };
  },
};
