import { ApiErrors, ApiSuccess } from './openapi';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags, ApiParam } from '@nestjs/swagger';
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
const AGENT_ID = /^[a-z][a-z0-9_-]{0,63}$/;
const TOOL = /^[a-z][a-z0-9_]*$/;

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
    const tools: Record<string, GrantDecision> = {};
    for (const [name, decision] of Object.entries(body.tools ?? {})) {
      if (!TOOL.test(name))
        throw new ValidationError(`tools: '${name.slice(0, 80)}' is not a tool name ([a-z][a-z0-9_]*)`, {
          field: 'tools',
        });
      if (decision !== 'allow' && decision !== 'deny')
        throw new ValidationError(`tools.${name}: must be 'allow' or 'deny'`, { field: `tools.${name}` });
      tools[name] = decision;
    }
    if (Object.keys(tools).length > 500) throw new ValidationError('tools: at most 500 overrides', { field: 'tools' });
    return presentGrant(
      await this.mcp.replaceGrant(principal, agentId, serverId, { default: body.default, tools, rules: body.rules }),
    );
  }

  private server(id: string): void {
    if (!ID.test(id) || !this.mcp.has(id))
      throw new NotFoundError(`no MCP server "${id.slice(0, 40)}" is configured`, { serverId: id.slice(0, 40) });
  }

  private agent(id: string): void {
    if (!AGENT_ID.test(id)) throw new NotFoundError(`unknown agent "${id.slice(0, 40)}"`, { agentId: id.slice(0, 40) });
  }
}
