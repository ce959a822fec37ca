import { ConflictError, NotFoundError } from '../errors';
import { accept, event, refuse, type Actor, type Decider, type Decision, type DecidedEvent } from './decider';

/** A server entry as config/mcp.yaml spells it (already validated by the config schema). */
export type McpServerEntry = Readonly<Record<string, unknown>>;

/** What the audit session says of one server the API has touched. */
export interface ManagedServerState {
  readonly revision: number;
  readonly status: 'active' | 'removed';
  readonly origin: 'yaml' | 'api';
  readonly entry: McpServerEntry | null;
}

/**
 * The platform's MCP servers as their audit session has them (ADR 0052): only servers the API
 * touched appear; a server config/mcp.yaml seeds and the log never names arrives in each command
 * as `seeded`.
 */
export interface McpServersState {
  readonly servers: Readonly<Record<string, ManagedServerState>>;
}

interface Base {
  readonly actor: Actor;
  readonly serverId: string;
  /** The server's entry in config/mcp.yaml, or null when the file does not configure it. */
  readonly seeded: McpServerEntry | null;
}

export interface AddMcpServer extends Base {
  readonly kind: 'AddMcpServer';
  readonly entry: McpServerEntry;
}

export interface UpdateMcpServer extends Base {
  readonly kind: 'UpdateMcpServer';
  /** The whole entry after the change. */
  readonly entry: McpServerEntry;
}

export interface RemoveMcpServer extends Base {
  readonly kind: 'RemoveMcpServer';
}

export type McpServerCommand = AddMcpServer | UpdateMcpServer | RemoveMcpServer;

/** The entry in effect for a server: the log's when it names the server, else the YAML seed. */
export function effectiveEntry(state: McpServersState, serverId: string, seeded: McpServerEntry | null) {
  const s = state.servers[serverId];
  if (s) return s.status === 'active' ? s.entry : null;
  return seeded;
}

const copy = (e: McpServerEntry): Record<string, unknown> => JSON.parse(JSON.stringify(e)) as Record<string, unknown>;

function changedFields(before: McpServerEntry, after: McpServerEntry): string[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
}

function decide(cmd: McpServerCommand, state: McpServersState): Decision {
  const { serverId } = cmd;
  const known = state.servers[serverId];
  const current = effectiveEntry(state, serverId, cmd.seeded);
  const revision = (known?.revision ?? 0) + 1;
  const origin = known?.origin ?? (cmd.seeded ? 'yaml' : 'api');
  if (cmd.kind === 'AddMcpServer') {
    if (current) return refuse(new ConflictError(`MCP server ${serverId} already exists`, { serverId, field: 'id' }));
    return accept(event('mcp.server.added', { serverId, entry: copy(cmd.entry), revision }, cmd.actor));
  }
  if (!current) return refuse(new NotFoundError(`no MCP server "${serverId}" is configured`, { serverId }));
  if (cmd.kind === 'RemoveMcpServer')
    return accept(event('mcp.server.removed', { serverId, origin, revision }, cmd.actor));
  const changed = changedFields(current, cmd.entry);
  if (changed.length === 0) return accept();
  return accept(
    event('mcp.server.updated', { serverId, entry: copy(cmd.entry), changed, origin, revision }, cmd.actor),
  );
}

function evolve(state: McpServersState, e: DecidedEvent): McpServersState {
  const at = (s: ManagedServerState) => ({
    servers: { ...state.servers, [(e.data as { serverId: string }).serverId]: s },
  });
  switch (e.type) {
    case 'mcp.server.added':
      // An id the API re-adds after removing a YAML server keeps its YAML origin (it still seeds it).
      return at({
        revision: e.data.revision,
        status: 'active',
        origin: state.servers[e.data.serverId]?.origin ?? 'api',
        entry: e.data.entry,
      });
    case 'mcp.server.updated':
      return at({ revision: e.data.revision, status: 'active', origin: e.data.origin, entry: e.data.entry });
    case 'mcp.server.removed':
      return at({ revision: e.data.revision, status: 'removed', origin: e.data.origin, entry: null });
    default:
      return state;
  }
}

/** Servers added, changed and removed through the API, each change numbered per server. */
export const mcpServerDecider: Decider<McpServerCommand, McpServersState> = {
  initialState: () => ({ servers: {} }),
  evolve,
  decide,
};
