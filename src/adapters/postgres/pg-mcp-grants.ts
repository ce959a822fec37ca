import { createHash } from 'node:crypto';
import { mcpGrantsOf } from '../../domain/agent';
import { agentGrantDecider } from '../../domain/deciders/agent-grant';
import { eventsOrThrow, evolveAll } from '../../domain/deciders/decider';
import { sessionDecider } from '../../domain/deciders/session';
import { NotFoundError } from '../../domain/errors';
import type { ArgumentRules, GrantDecision, McpServerGrant } from '../../domain/mcp-grants';
import type { Principal } from '../../domain/principal';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { Clock } from '../../ports/clock';
import type { Database } from './database';
import type { PgAppender } from './event-store/pg-appender';

/** A grant as the operator API reads and replaces it (rules: `{}` when none). */
export interface GrantBody {
  readonly default: GrantDecision;
  readonly tools: Readonly<Record<string, GrantDecision>>;
  readonly rules: Readonly<Record<string, ArgumentRules>>;
}

const body = (g: McpServerGrant): GrantBody => ({ default: g.default, tools: g.tools, rules: g.rules ?? {} });

export interface EffectiveGrant {
  readonly agentId: string;
  readonly serverId: string;
  /** null when the agent has no grant for the server (it never sees the server's tools). */
  readonly grant: GrantBody | null;
  /** `operator` (replaced through the API), `agent_file` (config/agents), or `none`. */
  readonly source: 'operator' | 'agent_file' | 'none';
  /** Operator revision (0 when never replaced). */
  readonly revision: number;
  readonly updatedBy: string | null;
  readonly updatedAt: string | null;
  /** The session whose event log holds this agent's grant audit trail. */
  readonly auditSessionId: string;
}

/** The audit session of an agent's grant changes: a stable id per (tenant, agent). */
export function grantAuditSessionId(tenantId: string, agentId: string): string {
  const h = createHash('sha256').update(`mcp-grant-audit\u0000${tenantId}\u0000${agentId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const AUDIT_PRINCIPAL = 'system:mcp-grant-audit';

/**
 * Operator grants of MCP servers to agents (docs/mcp.md "Per-agent grants"). A replacement is one
 * transaction: the audit event `agent.mcp_grant.replaced` (in the agent's audit session, created
 * on first use) and the `agent_mcp_grants` row the agent catalog overlays on the agent file.
 */
export class PgMcpGrants {
  constructor(
    private readonly db: Database,
    private readonly appender: PgAppender,
    private readonly agents: AgentCatalog,
    private readonly clock: Clock,
  ) {}

  async get(principal: Principal, agentId: string, serverId: string): Promise<EffectiveGrant> {
    const agent = await this.agents.current(agentId);
    if (!agent) throw new NotFoundError(`unknown agent "${agentId}"`, { agentId });
    const row = (
      await this.db.query<{ revision: number; updated_by: string; updated_at: Date }>(
        'SELECT revision, updated_by, updated_at FROM agent_mcp_grants WHERE agent_id = $1 AND server_id = $2',
        [agentId, serverId],
      )
    ).rows[0];
    // `current` already overlays operator rows on the agent file.
    const g = mcpGrantsOf(agent).find((x) => x.serverId === serverId) ?? null;
    return {
      agentId,
      serverId,
      grant: g ? body(g) : null,
      source: row ? 'operator' : g ? 'agent_file' : 'none',
      revision: row?.revision ?? 0,
      updatedBy: row?.updated_by ?? null,
      updatedAt: row ? new Date(row.updated_at).toISOString() : null,
      auditSessionId: grantAuditSessionId(principal.tenantId, agentId),
    };
  }

  async replace(principal: Principal, agentId: string, serverId: string, grant: GrantBody): Promise<EffectiveGrant> {
    const agent = await this.agents.current(agentId);
    if (!agent) throw new NotFoundError(`unknown agent "${agentId}"`, { agentId });
    const previous: McpServerGrant | undefined = mcpGrantsOf(agent).find((x) => x.serverId === serverId);
    const sessionId = grantAuditSessionId(principal.tenantId, agentId);
    await this.db.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [sessionId]);
      const row = (
        await client.query<{ revision: number }>(
          'SELECT revision FROM agent_mcp_grants WHERE agent_id = $1 AND server_id = $2 FOR UPDATE',
          [agentId, serverId],
        )
      ).rows[0];
      const exists = (await client.query('SELECT 1 FROM sessions WHERE id = $1', [sessionId])).rows.length > 0;
      if (!exists) {
        const audit = sessionDecider.decide(
          {
            kind: 'CreateSession',
            actor: { actorType: 'system' },
            agentId,
            agentVersion: agent.version,
            principalId: AUDIT_PRINCIPAL,
            title: `MCP grant audit of agent ${agentId}`,
            metadata: { audit: 'mcp_grants' },
          },
          sessionDecider.initialState(),
        );
        await this.appender.appendIn(client, { sessionId, tenantId: principal.tenantId, events: eventsOrThrow(audit) });
      }
      // The grant row's revision (read under its lock) is the fold of this server's audit events.
      const before = { revisions: { [serverId]: row?.revision ?? 0 } };
      const replaced = agentGrantDecider.decide(
        {
          kind: 'ReplaceMcpGrant',
          actor: { actorType: 'admin', actorId: principal.principalId },
          agentId,
          serverId,
          grant: { default: grant.default, tools: { ...grant.tools }, rules: { ...grant.rules } },
          previous: previous ? body(previous) : null,
        },
        before,
      );
      const events = eventsOrThrow(replaced);
      const revision = evolveAll(agentGrantDecider, before, events).revisions[serverId];
      await this.appender.appendIn(client, { sessionId, tenantId: principal.tenantId, events });
      await client.query(
        `INSERT INTO agent_mcp_grants (agent_id, server_id, default_decision, tools, revision, updated_by, updated_at, rules)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (agent_id, server_id) DO UPDATE SET default_decision = $3, tools = $4, revision = $5,
           updated_by = $6, updated_at = $7, rules = $8`,
        [
          agentId,
          serverId,
          grant.default,
          JSON.stringify(grant.tools),
          revision,
          principal.principalId,
          this.clock.nowIso(),
          JSON.stringify(grant.rules),
        ],
      );
    });
    return this.get(principal, agentId, serverId);
  }
}
