import type { McpAdmin, McpServerChangeOutcome, McpToolView } from '../api/mcp.controller';
import { ConfigurationError, NotFoundError, ValidationError } from '../domain/errors';
import type { McpServerEntry } from '../domain/deciders/mcp-server';
import type { Principal } from '../domain/principal';
import { ArgumentRuleError, parseArgumentRules } from '../policy/argument-rules';
import type { McpServerChange } from '../ports/mcp-server-log';
import { parseServerEntry } from './mcp-servers';
import type { Platform } from './platform';

type AdminPlatform = Pick<
  Platform,
  'mcp' | 'mcpGrants' | 'mcpControl' | 'mcpServers' | 'registry' | 'log' | 'settings' | 'db' | 'agents'
>;

/** Binds the operator routes (McpController) to the platform's MCP hub, server log and grant store. */
export function mcpAdminFor(platform: AdminPlatform): McpAdmin {
  return {
    status: () => platform.mcp.status(),
    has: (id) => platform.mcp.has(id),
    // Applied here, then broadcast so every other process (e.g. the worker of `agent start`) applies it too.
    control: async (id, action) => {
      const report = await platform.mcp.control(id, action);
      const others = await platform.mcpControl.broadcast(id, action).catch((e: unknown) => {
        platform.log.warn('mcp operator action not broadcast', { server: id, error: String(e) });
        return null;
      });
      return { server: report, others };
    },
    getGrant: (principal, agentId, serverId) => platform.mcpGrants.get(principal, agentId, serverId),
    replaceGrant: (principal, agentId, serverId, grant) =>
      platform.mcpGrants.replace(principal, agentId, serverId, {
        default: grant.default,
        tools: grant.tools,
        rules: rulesOrRefuse(grant.rules),
      }),
    ...serverAdmin(platform),
  };
}

/** Run-time server management (ADR 0052): validate, decide and append, apply here, broadcast `sync`. */
function serverAdmin(
  platform: AdminPlatform,
): Pick<
  McpAdmin,
  'addServer' | 'removeServer' | 'settings' | 'updateSettings' | 'tools' | 'getAccess' | 'replaceAccess'
> {
  const { runtime, store } = platform.mcpServers;
  const change = async (principal: Principal, c: McpServerChange): Promise<McpServerChangeOutcome> => {
    const written = await store.apply(principal, c, runtime.seeded(c.serverId));
    // Applied here and in every other process at once (each starts its own child).
    const [applied, others] = await Promise.all([
      // Validated before the append, so a failure here is this host's (e.g. the child cannot start).
      runtime.sync(c.serverId).catch((e: unknown) => {
        platform.log.warn('mcp server change not applied here', { server: c.serverId, error: String(e) });
        return { state: 'failed' };
      }),
      written
        ? platform.mcpControl.broadcast(c.serverId, 'sync').catch((e: unknown) => {
            platform.log.warn('mcp server change not broadcast', { server: c.serverId, error: String(e) });
            return null;
          })
        : Promise.resolve({ acknowledged: [], unacknowledged: [] }),
    ]);
    const server = platform.mcp.status().find((s) => s.id === c.serverId) ?? null;
    return { state: applied.state, server, entry: await runtime.entry(c.serverId), others };
  };
  return {
    addServer: async (principal, body) => {
      const entry = validEntry(platform, body);
      return change(principal, { kind: 'add', serverId: String(entry.id), entry });
    },
    removeServer: (principal, id) => change(principal, { kind: 'remove', serverId: id }),
    settings: async (id) => {
      const entry = await runtime.entry(id);
      return entry ? { entry, origin: runtime.seeded(id) ? 'yaml' : 'api' } : null;
    },
    updateSettings: async (principal, id, patch) => {
      const current = await runtime.entry(id);
      if (!current) return null;
      const entry = validEntry(platform, merged(current, patch, id));
      return change(principal, { kind: 'update', serverId: id, entry });
    },
    tools: (id) => toolsOf(platform, id),
    getAccess: (principal, id) => accessOf(platform, principal, id),
    replaceAccess: async (principal, id, agents) => {
      const current = await accessOf(platform, principal, id);
      for (const agentId of Object.keys(agents)) {
        assertAgentId(agentId);
        // Every agent is checked before any grant changes: the set is refused whole.
        if (!(await platform.agents.current(agentId)))
          throw new NotFoundError(`unknown agent "${agentId}"`, { agentId, field: `agents.${agentId}` });
      }
      // Every agent not in the set loses access; the set's agents get exactly their grant.
      for (const g of current)
        if (!(g.agentId in agents))
          await platform.mcpGrants.replace(principal, g.agentId, id, { default: 'deny', tools: {}, rules: {} });
      for (const [agentId, grant] of Object.entries(agents))
        await platform.mcpGrants.replace(principal, agentId, id, {
          default: grant.default,
          tools: grant.tools,
          rules: rulesOrRefuse(grant.rules, `agents.${agentId}.rules`),
        });
      return accessOf(platform, principal, id);
    },
  };
}

/** The entry validated exactly as config/mcp.yaml is, and checked against this host's isolation. */
function validEntry(platform: AdminPlatform, body: unknown): McpServerEntry {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('the body must be one server entry (an object)', { field: '(entry)' });
  const config = parseServerEntry(body, platform.settings.configDir);
  try {
    platform.mcp.check(config);
  } catch (e) {
    if (!(e instanceof ConfigurationError)) throw e;
    const field = (e.details as { field?: unknown } | undefined)?.field;
    throw new ValidationError(e.message, { field: typeof field === 'string' ? field : 'isolation' });
  }
  return body as McpServerEntry;
}

/** Settings over the current entry: top-level fields replaced (`transport` merged; null removes a field). */
function merged(current: McpServerEntry, patch: unknown, id: string): Record<string, unknown> {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
    throw new ValidationError('settings must be an object of server entry fields', { field: '(settings)' });
  const p = patch as Record<string, unknown>;
  if ('id' in p && p.id !== id) throw new ValidationError('id: a server cannot be renamed', { field: 'id' });
  const out: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(p)) {
    if (v === null) delete out[k];
    else if (k === 'transport' && typeof v === 'object' && !Array.isArray(v))
      out[k] = { ...(current.transport as Record<string, unknown>), ...(v as Record<string, unknown>) };
    else out[k] = v;
  }
  return out;
}

function toolsOf(platform: AdminPlatform, id: string): McpToolView[] {
  const prefix = `mcp.${id}.`;
  return platform.registry
    .list()
    .filter((t) => t.spec.name.startsWith(prefix))
    .map(({ spec }) => ({
      name: spec.name,
      description: spec.description,
      inputSchema: spec.inputSchema,
      classification: {
        sideEffect: spec.sideEffect,
        risk: spec.risk,
        idempotency: spec.idempotency,
        requiredScopes: spec.requiredScopes,
      },
    }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Every agent with a grant on the server: the agent files' and the operator's. */
async function accessOf(platform: AdminPlatform, principal: Principal, id: string) {
  const operator = await platform.db.query<{ agent_id: string }>(
    'SELECT DISTINCT agent_id FROM agent_mcp_grants WHERE server_id = $1',
    [id],
  );
  const ids = new Set([...platform.mcpServers.agentIds, ...operator.rows.map((r) => r.agent_id)]);
  const views = await Promise.all([...ids].sort().map((a) => platform.mcpGrants.get(principal, a, id)));
  return views.filter((v) => v.grant !== null);
}

const AGENT_ID = /^[a-z][a-z0-9_-]{0,63}$/;
function assertAgentId(id: string): void {
  if (!AGENT_ID.test(id))
    throw new ValidationError(`agents: '${id.slice(0, 80)}' is not an agent id`, {
      field: `agents.${id.slice(0, 80)}`,
    });
}

/** The body's argument rules compiled (a rule that is not a valid schema → 400 naming the field). */
function rulesOrRefuse(raw: unknown, field = 'rules') {
  try {
    return parseArgumentRules(raw, field);
  } catch (e) {
    if (e instanceof ArgumentRuleError) throw new ValidationError(e.message, { field: e.field });
    throw e;
  }
}
