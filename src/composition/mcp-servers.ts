import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { parseMcpConfig, type McpConfig, type McpHub, type McpServerConfig } from '../adapters/mcp';
import type { DiscoveryResult } from '../adapters/mcp';
import type { Queryable } from '../adapters/postgres/database';
import { readMcpServersState } from '../adapters/postgres/pg-mcp-servers';
import { effectiveEntry, type McpServerEntry, type McpServersState } from '../domain/deciders/mcp-server';
import { ConfigurationError, ValidationError } from '../domain/errors';
import type { Logger } from '../ports/logger';
import type { ToolRegistry } from '../tools/registry';

/** What a refused entry is called in messages (the API's counterpart of the file name). */
const API_SOURCE = 'mcp server entry';

/** The raw server entries of `<configDir>/mcp.yaml` by id (already validated by loadMcpConfig). */
export function yamlServerEntries(configDir: string): Map<string, McpServerEntry> {
  const file = path.join(configDir, 'mcp.yaml');
  const out = new Map<string, McpServerEntry>();
  if (!fs.existsSync(file)) return out;
  const doc = parse(fs.readFileSync(file, 'utf8')) as { servers?: McpServerEntry[] } | null;
  for (const s of doc?.servers ?? []) out.set(String(s.id), s);
  return out;
}

/**
 * One server entry through the config/mcp.yaml validator itself (same schema, same checks, same
 * `${VAR}` expansion against this process's environment); a refusal is a 400 naming the field.
 */
export function parseServerEntry(entry: unknown, configDir: string): McpServerConfig {
  try {
    return parseMcpConfig({ version: 1, servers: [entry] }, API_SOURCE, process.env, configDir).servers[0];
  } catch (e) {
    if (!(e instanceof ConfigurationError)) throw e;
    const field = (e.details as { field?: unknown } | undefined)?.field;
    throw new ValidationError(e.message, { field: typeof field === 'string' ? field : '(entry)' });
  }
}

/**
 * The servers this process starts with (ADR 0052): every YAML server the log does not name, as the
 * file has it; every server the log names as the log has it (a removed one not at all). A stored
 * entry this process cannot use (e.g. a `${VAR}` it lacks) is logged and skipped, not fatal.
 */
export async function effectiveMcpConfig(
  db: Queryable,
  configDir: string,
  yaml: McpConfig,
  log: Logger,
): Promise<McpConfig> {
  const state: McpServersState = await readMcpServersState(db).catch((e: unknown) => {
    // Before migration 1765430000000 (e.g. a command run ahead of `agent migrate`): the file alone.
    if ((e as { code?: string }).code !== '42P01') throw e;
    log.warn('mcp_servers does not exist yet: MCP servers from config/mcp.yaml only');
    return { servers: {} };
  });
  const servers: McpServerConfig[] = yaml.servers.filter((s) => state.servers[s.id] === undefined);
  for (const [id, s] of Object.entries(state.servers).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (s.status !== 'active' || !s.entry) continue;
    try {
      servers.push(parseServerEntry(s.entry, configDir));
    } catch (e) {
      log.error('managed mcp server not started: its entry is refused here', { server: id, error: String(e) });
    }
  }
  return { version: yaml.version, servers };
}

/** Registers a discovery's tools (dropping the server's previous ones); a refused tool is disabled. */
export function registerDiscovered(mcp: McpHub, registry: ToolRegistry, result: DiscoveryResult, log: Logger): void {
  unregisterServer(registry, result.serverId);
  for (const tool of result.tools) {
    try {
      registry.register(tool);
    } catch (e) {
      log.warn('mcp tool disabled', { server: result.serverId, tool: tool.spec.name, reason: (e as Error).message });
      mcp.markDisabled(result.serverId, tool.spec.name, (e as Error).message);
    }
  }
}

function unregisterServer(registry: ToolRegistry, serverId: string): void {
  const prefix = `mcp.${serverId}.`;
  for (const t of registry.list()) if (t.spec.name.startsWith(prefix)) registry.unregister(t.spec.name);
}

/**
 * A process's side of run-time server management: `sync` re-reads one server's entry (the log's,
 * else the YAML seed) and starts, replaces or stops this process's supervisor to match, registering
 * or dropping its tools. Called for the process's own API changes and, through the control channel
 * (`sync`), for every other process's.
 */
export class McpServerRuntime {
  constructor(
    private readonly d: {
      readonly hub: McpHub;
      readonly registry: ToolRegistry;
      readonly db: Queryable;
      readonly configDir: string;
      readonly yaml: ReadonlyMap<string, McpServerEntry>;
      readonly log: Logger;
    },
  ) {}

  /** The entry in effect for a server, or null when it does not exist. */
  async entry(serverId: string): Promise<McpServerEntry | null> {
    return effectiveEntry(await readMcpServersState(this.d.db), serverId, this.d.yaml.get(serverId) ?? null);
  }

  seeded(serverId: string): McpServerEntry | null {
    return this.d.yaml.get(serverId) ?? null;
  }

  /** Per server, the sync in progress: a local change and a notice for the same server never interleave. */
  private readonly running = new Map<string, Promise<unknown>>();

  sync(serverId: string): Promise<{ readonly state: string }> {
    const before = this.running.get(serverId) ?? Promise.resolve();
    const next = before.catch(() => undefined).then(() => this.apply(serverId));
    this.running.set(serverId, next);
    void next
      .finally(() => {
        if (this.running.get(serverId) === next) this.running.delete(serverId);
      })
      .catch(() => undefined);
    return next;
  }

  private async apply(serverId: string): Promise<{ readonly state: string }> {
    const { hub, registry, log } = this.d;
    const entry = await this.entry(serverId);
    if (!entry) {
      unregisterServer(registry, serverId);
      const had = await hub.remove(serverId);
      if (had) log.info('mcp server removed at run time', { server: serverId });
      return { state: 'removed' };
    }
    const started = Date.now();
    const config = parseServerEntry(entry, this.d.configDir);
    unregisterServer(registry, serverId);
    await hub.put(config);
    const result = await hub.discover(serverId);
    registerDiscovered(hub, registry, result, log);
    log.info('mcp server applied at run time', {
      server: serverId,
      tools: result.tools.length,
      error: result.error,
      ms: Date.now() - started,
    });
    return { state: hub.status().find((s) => s.id === serverId)?.state ?? 'unknown' };
  }
}
