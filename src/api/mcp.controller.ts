import { ApiErrors, ApiSuccess } from './openapi';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags, ApiParam } from '@nestjs/swagger';
import { IsIn, IsObject, IsOptional } from 'class-validator';
import { NotFoundError, ValidationError } from '../domain/errors';
import type { GrantDecision } from '../domain/mcp-grants';
import type { Principal } from '../domain/principal';
import { Auth, RequireScope } from './auth/decorators';

/** What the operator routes need from the composition root (bound to Platform.mcp / Platform.mcpGrants). */
export const MCP_ADMIN = Symbol('McpAdmin');

export interface McpServerView {
  readonly id: string;
  readonly transport: 'stdio' | 'http';
  readonly state: string;
  readonly protocolVersion: string | null;
  /** The era the connection settled on (ADR 0051), null until connected. */
  readonly era: 'legacy' | 'modern' | null;
  readonly toolCount: number;
  readonly disabledTools: readonly { readonly name: string; readonly reason: string }[];
  readonly restarts: number;
  readonly lastError: string | null;
  readonly pid: number | null;
  readonly server: string | null;
  readonly counters: { readonly calls: number; readonly failedCalls: number; readonly protocolErrors: number };
}

/** An operator action's outcome: this process's server, and what the other processes answered. */
export interface McpControlOutcome {
  readonly server: McpServerView;
  readonly others: {
    readonly acknowledged: readonly {
      readonly process: string;
      readonly service: string;
      readonly pid: number;
      readonly state: string | null;
      readonly error: string | null;
    }[];
    readonly unacknowledged: readonly string[];
  } | null;
}

export interface GrantView {
  readonly agentId: string;
  readonly serverId: string;
  readonly grant: {
    readonly default: GrantDecision;
    readonly tools: Readonly<Record<string, GrantDecision>>;
    readonly rules: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  } | null;
  readonly source: string;
  readonly revision: number;
  readonly updatedBy: string | null;
  readonly updatedAt: string | null;
  readonly auditSessionId: string;
}

/** One tool of a server as `GET /v1/mcp/servers/{id}/tools` shows it. */
export interface McpToolView {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly classification: {
    readonly sideEffect: string;
    readonly risk: string;
    readonly idempotency: string;
    readonly requiredScopes: readonly string[];
  };
}

/** A run-time change's outcome (ADR 0052): the server here after it, its entry, and the other processes. */
export interface McpServerChangeOutcome {
  /** This process's supervisor state after applying the change (`removed` when the server is gone). */
  readonly state: string;
  readonly server: McpServerView | null;
  readonly entry: Readonly<Record<string, unknown>> | null;
  readonly others: McpControlOutcome['others'];
}

/** What `PUT /v1/mcp/servers/{id}/access` sets per agent. */
export interface AccessGrant {
  readonly default: GrantDecision;
  readonly tools: Record<string, GrantDecision>;
  readonly rules: unknown;
}

export interface McpAdmin {
  status(): McpServerView[];
  has(serverId: string): boolean;
  /**
   * Applies the action here and in every other process; `others` is null when the broadcast itself
   * failed (the action was applied in this process only).
   */
  control(serverId: string, action: 'start' | 'stop' | 'restart'): Promise<McpControlOutcome>;
  getGrant(principal: Principal, agentId: string, serverId: string): Promise<GrantView>;
  replaceGrant(
    principal: Principal,
    agentId: string,
    serverId: string,
    grant: { default: GrantDecision; tools: Record<string, GrantDecision>; rules: unknown },
  ): Promise<GrantView>;
  /** Adds a server (400 naming the field, 409 for a taken id); applied here and in every process. */
  addServer(principal: Principal, entry: unknown): Promise<McpServerChangeOutcome>;
  /** Removes a server (404 when it does not exist); its process stops everywhere. */
  removeServer(principal: Principal, serverId: string): Promise<McpServerChangeOutcome>;
  /** The server's entry in effect, or null when there is no such server. */
  settings(serverId: string): Promise<{ entry: Readonly<Record<string, unknown>>; origin: 'yaml' | 'api' } | null>;
  /** Replaces fields of the entry; null when there is no such server. */
  updateSettings(principal: Principal, serverId: string, patch: unknown): Promise<McpServerChangeOutcome | null>;
  tools(serverId: string): McpToolView[];
  getAccess(principal: Principal, serverId: string): Promise<GrantView[]>;
  replaceAccess(principal: Principal, serverId: string, agents: Record<string, AccessGrant>): Promise<GrantView[]>;
}

export class ReplaceGrantBody {
  @ApiProperty({ enum: ['allow', 'deny'], description: "Decision for the server's tools not listed in `tools`" })
  @IsIn(['allow', 'deny'])
  default!: GrantDecision;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', enum: ['allow', 'deny'] },
    example: { get_env: 'deny' },
    description: 'Per-tool overrides keyed by the tool part of mcp.<server>.<tool>',
  })
  @IsOptional()
  @IsObject()
  tools?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'object', additionalProperties: { type: 'object' } },
    example: { read_file: { path: { type: 'string', pattern: '^docs/' } } },
    description:
      'Argument rules: per tool, per argument, a JSON Schema the argument must satisfy (checked before the call; a violation is tool.call.denied argument_rule). Absent: none',
  })
  @IsOptional()
  @IsObject()
  rules?: Record<string, unknown>;
}

const presentServer = (s: McpServerView) => ({
  id: s.id,
  transport: s.transport,
  state: s.state,
  protocol_version: s.protocolVersion,
  protocol_era: s.era,
  tool_count: s.toolCount,
  disabled_tools: s.disabledTools,
  restarts: s.restarts,
  last_error: s.lastError,
  pid: s.pid,
  server_name: s.server,
  counters: {
    calls: s.counters.calls,
    failed_calls: s.counters.failedCalls,
    protocol_errors: s.counters.protocolErrors,
  },
});

const presentGrant = (g: GrantView) => ({
  agent_id: g.agentId,
  server_id: g.serverId,
  grant: g.grant,
  source: g.source,
  revision: g.revision,
  updated_by: g.updatedBy,
  updated_at: g.updatedAt,
  audit_session_id: g.auditSessionId,
});

const ID = /^[a-z][a-z0-9_]{0,31}$/;
const unknownServer = (id: string) =>
  new NotFoundError(`no MCP server "${id.slice(0, 40)}" is configured`, { serverId: id.slice(0, 40) });

/** The body of `POST /v1/mcp/servers` in the document: one entry of config/mcp.yaml (docs/mcp.md). */
const SERVER_ENTRY_SCHEMA = {
  type: 'object',
  required: ['id', 'transport'],
  properties: {
    id: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,31}$' },
    transport: {
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string', enum: ['stdio', 'http'] } },
      additionalProperties: true,
    },
  },
  additionalProperties: true,
  description:
    'One server entry exactly as config/mcp.yaml spells it (docs/mcp.md): id, transport {type stdio: command (one executable), args, cwd, env_allowlist | type http: url, auth {env}}, restart, health_interval_seconds, isolation, paths, classification, tools, … Environment values are variable names, never values.',
  example: {
    id: 'files',
    transport: { type: 'stdio', command: '${node}', args: ['server.js'], env_allowlist: ['HOME'] },
    restart: { strategy: 'on_failure', max_restarts: 5 },
    classification: { side_effect: 'read', risk: 'low', idempotency: 'read_only' },
  },
};
const AGENT_ID = /^[a-z][a-z0-9_-]{0,63}$/;
const TOOL = /^[a-z][a-z0-9_]*$/;

/** Per-tool overrides of a grant body, checked (`field` names where they are in the body). */
function toolDecisions(raw: unknown, field: string): Record<string, GrantDecision> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ValidationError(`${field}: must be an object`, { field });
  const tools: Record<string, GrantDecision> = {};
  for (const [name, decision] of Object.entries(raw as Record<string, unknown>)) {
    if (!TOOL.test(name))
      throw new ValidationError(`${field}: '${name.slice(0, 80)}' is not a tool name ([a-z][a-z0-9_]*)`, { field });
    if (decision !== 'allow' && decision !== 'deny')
      throw new ValidationError(`${field}.${name}: must be 'allow' or 'deny'`, { field: `${field}.${name}` });
    tools[name] = decision;
  }
  if (Object.keys(tools).length > 500) throw new ValidationError(`${field}: at most 500 overrides`, { field });
  return tools;
}

/** `PUT …/access`'s `agents`: per agent id, a grant (default, tools, rules). */
function accessGrants(raw: unknown): Record<string, AccessGrant> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ValidationError('agents: must be an object keyed by agent id', { field: 'agents' });
  const out: Record<string, AccessGrant> = {};
  for (const [agentId, g] of Object.entries(raw)) {
    const at = `agents.${agentId.slice(0, 64)}`;
    if (!AGENT_ID.test(agentId)) throw new ValidationError(`${at}: not an agent id`, { field: at });
    const grant = (typeof g === 'object' && g !== null ? g : {}) as Record<string, unknown>;
    if (grant.default !== 'allow' && grant.default !== 'deny')
      throw new ValidationError(`${at}.default: must be 'allow' or 'deny'`, { field: `${at}.default` });
    out[agentId] = {
      default: grant.default,
      tools: toolDecisions(grant.tools ?? {}, `${at}.tools`),
      rules: grant.rules ?? {},
    };
  }
  if (Object.keys(out).length > 1000) throw new ValidationError('agents: at most 1000 agents', { field: 'agents' });
  return out;
}

const presentChange = (c: McpServerChangeOutcome) => ({
  state: c.state,
  server: c.server ? presentServer(c.server) : null,
  entry: c.entry,
  processes: {
    broadcast: c.others !== null,
    acknowledged: (c.others?.acknowledged ?? []).map((a) => ({
      process: a.process,
      service: a.service,
      pid: a.pid,
      state: a.state,
      error: a.error,
    })),
    unacknowledged: c.others?.unacknowledged ?? [],
  },
});

const presentTool = (t: McpToolView) => ({
  name: t.name,
  description: t.description,
  input_schema: t.inputSchema,
  classification: {
    side_effect: t.classification.sideEffect,
    risk: t.classification.risk,
    idempotency: t.classification.idempotency,
    required_scopes: t.classification.requiredScopes,
  },
});

/** Operator routes for MCP servers and per-agent grants (docs/api.md, docs/mcp.md); `admin` scope. */
@ApiTags('mcp')
@Controller('v1')
export class McpController {
  constructor(@Inject(MCP_ADMIN) private readonly mcp: McpAdmin) {}

  @Get('mcp/servers')
  @RequireScope('admin')
  @ApiOperation({ summary: 'Configured MCP servers: state, protocol version, tool count, restarts, last error' })
  @ApiSuccess(200, '{items}: one per configured server')
  list() {
    return { items: this.mcp.status().map(presentServer) };
  }

  @Post('mcp/servers')
  @HttpCode(201)
  @RequireScope('admin')
  @ApiOperation({
    summary:
      'Add an MCP server at run time (mcp.server.added): one server entry, validated exactly as config/mcp.yaml; applied in every process',
  })
  @ApiBody({ schema: SERVER_ENTRY_SCHEMA })
  @ApiSuccess(201, 'The new server here, its entry, and what every other process did (processes)')
  @ApiErrors(400, 409, 413, 415)
  async addServer(@Auth() principal: Principal, @Body() body: Record<string, unknown>) {
    return presentChange(await this.mcp.addServer(principal, body));
  }

  @Delete('mcp/servers/:id')
  @RequireScope('admin')
  @ApiOperation({ summary: 'Remove an MCP server (mcp.server.removed); its process stops in every process' })
  @ApiSuccess(200, 'state removed, and what every other process did (processes)')
  @ApiErrors(404)
  async removeServer(@Auth() principal: Principal, @Param('id') id: string) {
    this.serverId(id);
    return presentChange(await this.mcp.removeServer(principal, id));
  }

  @Get('mcp/servers/:id/settings')
  @RequireScope('admin')
  @ApiOperation({
    summary: "An MCP server's entry in effect (restart policy, health interval, env references, isolation…)",
  })
  @ApiSuccess(200, '{id, origin (yaml | api), settings: the server entry as config/mcp.yaml spells it}')
  @ApiErrors(404)
  async settings(@Param('id') id: string) {
    this.serverId(id);
    const s = await this.mcp.settings(id);
    if (!s) throw unknownServer(id);
    return { id, origin: s.origin, settings: s.entry };
  }

  @Put('mcp/servers/:id/settings')
  @RequireScope('admin')
  @ApiOperation({
    summary:
      "Change an MCP server's entry (mcp.server.updated): the given fields replace the entry's (null removes one), validated as config/mcp.yaml; the server restarts with them in every process",
  })
  @ApiBody({ schema: { type: 'object', additionalProperties: true, example: { health_interval_seconds: 10 } } })
  @ApiSuccess(200, 'The server here after the change, its entry, and what every other process did (processes)')
  @ApiErrors(400, 404, 413, 415)
  async updateSettings(@Auth() principal: Principal, @Param('id') id: string, @Body() body: Record<string, unknown>) {
    this.serverId(id);
    const c = await this.mcp.updateSettings(principal, id, body);
    if (!c) throw unknownServer(id);
    return presentChange(c);
  }

  @Get('mcp/servers/:id/tools')
  @RequireScope('admin')
  @ApiOperation({ summary: "An MCP server's tools: names, descriptions, input schemas and classification" })
  @ApiSuccess(200, '{items, disabled}: the tools offered, and the ones disabled with their reasons')
  @ApiErrors(404)
  tools(@Param('id') id: string) {
    this.server(id);
    const status = this.mcp.status().find((s) => s.id === id);
    return { items: this.mcp.tools(id).map(presentTool), disabled: status?.disabledTools ?? [] };
  }

  @Get('mcp/servers/:id/access')
  @RequireScope('admin')
  @ApiOperation({ summary: "Every agent's grant on one MCP server" })
  @ApiSuccess(200, '{items}: one effective grant per agent that has one')
  @ApiErrors(404)
  async getAccess(@Auth() principal: Principal, @Param('id') id: string) {
    this.server(id);
    return { items: (await this.mcp.getAccess(principal, id)).map(presentGrant) };
  }

  @Put('mcp/servers/:id/access')
  @RequireScope('admin')
  @ApiOperation({
    summary:
      "Replace every agent's grant on one MCP server as a set (each change audited as agent.mcp_grant.replaced); agents not in the set are denied",
  })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['agents'],
      properties: {
        agents: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            required: ['default'],
            properties: {
              default: { type: 'string', enum: ['allow', 'deny'] },
              tools: { type: 'object', additionalProperties: { type: 'string', enum: ['allow', 'deny'] } },
              rules: { type: 'object' },
            },
          },
        },
      },
      example: { agents: { assistant: { default: 'allow', tools: { get_env: 'deny' } } } },
    },
  })
  @ApiSuccess(200, '{items}: every agent with a grant on the server afterwards')
  @ApiErrors(400, 404, 413, 415)
  async replaceAccess(@Auth() principal: Principal, @Param('id') id: string, @Body() body: Record<string, unknown>) {
    this.server(id);
    const agents = accessGrants(body.agents);
    return { items: (await this.mcp.replaceAccess(principal, id, agents)).map(presentGrant) };
  }

  @Post('mcp/servers/:id/:action')
  @HttpCode(200)
  @RequireScope('admin')
  @ApiOperation({ summary: 'start | stop | restart one MCP server (start and restart reset its restart window)' })
  @ApiParam({ name: 'action', enum: ['start', 'stop', 'restart'] })
  @ApiSuccess(200, 'The server after the action, with what the other processes did (processes)')
  @ApiErrors(404)
  async control(@Param('id') id: string, @Param('action') action: string) {
    if (!['start', 'stop', 'restart'].includes(action))
      throw new NotFoundError(`no route POST /v1/mcp/servers/{id}/${action.slice(0, 40)}`, { action });
    this.server(id);
    const outcome = await this.mcp.control(id, action as 'start' | 'stop' | 'restart');
    return {
      ...presentServer(outcome.server),
      // The other processes (e.g. the worker of `agent start`): who applied the action, with what result.
      processes: {
        broadcast: outcome.others !== null,
        acknowledged: (outcome.others?.acknowledged ?? []).map((a) => ({
          process: a.process,
          service: a.service,
          pid: a.pid,
          state: a.state,
          error: a.error,
        })),
        unacknowledged: outcome.others?.unacknowledged ?? [],
      },
    };
  }

  @Get('agents/:agentId/mcp-grants/:serverId')
  @RequireScope('admin')
  @ApiOperation({ summary: "An agent's effective grant for one MCP server" })
  @ApiSuccess(200, 'The effective grant, its source and revision')
  @ApiErrors(404)
  async getGrant(@Auth() principal: Principal, @Param('agentId') agentId: string, @Param('serverId') serverId: string) {
    this.agent(agentId);
    this.server(serverId);
    return presentGrant(await this.mcp.getGrant(principal, agentId, serverId));
  }

  @Put('agents/:agentId/mcp-grants/:serverId')
  @RequireScope('admin')
  @ApiOperation({ summary: "Replace an agent's grant for one MCP server (audited as agent.mcp_grant.replaced)" })
  @ApiSuccess(200, 'The new grant (revision + 1)')
  @ApiErrors(400, 404, 413, 415)
  async replaceGrant(
    @Auth() principal: Principal,
    @Param('agentId') agentId: string,
    @Param('serverId') serverId: string,
    @Body() body: ReplaceGrantBody,
  ) {
    this.agent(agentId);
    this.server(serverId);
    const tools = toolDecisions(body.tools ?? {}, 'tools');
    return presentGrant(
      await this.mcp.replaceGrant(principal, agentId, serverId, { default: body.default, tools, rules: body.rules }),
    );
  }

  private server(id: string): void {
    if (!ID.test(id) || !this.mcp.has(id)) throw unknownServer(id);
  }

  private serverId(id: string): void {
    if (!ID.test(id)) throw unknownServer(id);
  }

  private agent(id: string): void {
    if (!AGENT_ID.test(id)) throw new NotFoundError(`unknown agent "${id.slice(0, 40)}"`, { agentId: id.slice(0, 40) });
  }
}
