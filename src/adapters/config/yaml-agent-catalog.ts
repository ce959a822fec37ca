import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { parse } from 'yaml';
import { mcpGrantsOf, type AgentSpec } from '../../domain/agent';
import { withGrant, type GrantDecision, type McpServerGrant } from '../../domain/mcp-grants';
import { consensusConfigError } from '../../domain/consensus/settings';
import { ConfigurationError } from '../../domain/errors';
import { isMultitaskStrategy, MULTITASK_STRATEGIES, type MultitaskStrategy } from '../../domain/run/multitask';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { Database } from '../postgres';

const limitsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['max_steps', 'max_model_calls', 'max_tool_calls'],
  properties: {
    max_steps: { type: 'integer', minimum: 1 },
    max_model_calls: { type: 'integer', minimum: 1 },
    max_tool_calls: { type: 'integer', minimum: 0 },
    max_input_tokens: { type: ['integer', 'null'], minimum: 1 },
    max_output_tokens: { type: ['integer', 'null'], minimum: 1 },
    max_cost: { type: ['string', 'null'] },
    deadline_seconds: { type: ['number', 'null'], exclusiveMinimum: 0 },
  },
};
const agentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'version', 'name', 'instructions', 'model_policy', 'enabled_tools', 'policy_profile', 'limits'],
  properties: {
    id: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,63}$' },
    version: { type: 'integer', minimum: 1 },
    name: { type: 'string', minLength: 1 },
    instructions: { type: 'string', minLength: 1 },
    model_policy: { type: 'string', minLength: 1 },
    enabled_tools: { type: 'array', items: { type: 'string' } },
    enabled_skills: { type: 'array', items: { type: 'string' } },
    // A list of granted servers (default allow), or per server {default, tools: {<tool>: allow|deny}}.
    mcp_servers: {
      anyOf: [
        { type: 'array', items: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,31}$' } },
        {
          type: 'object',
          propertyNames: { pattern: '^[a-z][a-z0-9_]{0,31}$' },
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            required: ['default'],
            properties: {
              default: { enum: ['allow', 'deny'] },
              tools: {
                type: 'object',
                propertyNames: { pattern: '^[a-z][a-z0-9_]*$' },
                additionalProperties: { enum: ['allow', 'deny'] },
              },
              // {<tool>: {<argument>: <JSON Schema>}}; compiled (and refused naming the field) by the policy layer at startup.
              rules: { type: 'object' },
            },
          },
        },
      ],
    },
    policy_profile: { type: 'string' },
    // ADR 0032: the most a run of this agent may do; a run holds its submitter's scopes narrowed to these.
    allowed_scopes: {
      type: 'array',
      items: { type: 'string', pattern: '^[a-z][a-z0-9_.:-]{0,99}$' },
      uniqueItems: true,
    },
    // delegate.run (ADR 0037): enabled: true/false decides for this agent (absent: DELEGATION_ENABLED).
    delegation: {
      type: 'object',
      additionalProperties: false,
      properties: { enabled: { type: 'boolean' }, max_fan_out: { type: 'integer', minimum: 1, maximum: 16 } },
    },
    // Consensus mode (ADR 0047): checked field by field by consensusConfigError, which names the field.
    mode: {},
    consensus: {},
    // What a message does while a run of the session works (issue 33); the server default is reject.
    multitask_strategy: { enum: [...MULTITASK_STRATEGIES] },
    // Enabled tools a sandbox.run_program program may call besides pure computations (docs/sandbox.md).
    bridge_tools: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
    limits: limitsSchema,
    metadata: { type: 'object' },
  },
};

interface AgentYaml {
  id: string;
  version: number;
  name: string;
  instructions: string;
  model_policy: string;
  enabled_tools: string[];
  enabled_skills?: string[];
  mcp_servers?:
    | string[]
    | Record<
        string,
        { default: GrantDecision; tools?: Record<string, GrantDecision>; rules?: McpServerGrant['rules'] }
      >;
  policy_profile: string;
  allowed_scopes?: string[];
  delegation?: { enabled?: boolean; max_fan_out?: number };
  mode?: 'single' | 'consensus';
  consensus?: Record<string, unknown>;
  multitask_strategy?: MultitaskStrategy;
  bridge_tools?: string[];
  limits: {
    max_steps: number;
    max_model_calls: number;
    max_tool_calls: number;
    max_input_tokens?: number | null;
    max_output_tokens?: number | null;
    max_cost?: string | null;
    deadline_seconds?: number | null;
  };
  metadata?: Record<string, unknown>;
}

/** Parses and validates every `config/agents/*.yaml`, naming the file and field on error. */
export function loadAgentFiles(dir: string, modelPolicyOverride: string | null = null): AgentSpec[] {
  const validate = new Ajv({ allErrors: true }).compile(agentSchema);
  if (!fs.existsSync(dir)) throw new ConfigurationError(`agent directory ${dir} does not exist`, { dir });
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .map((file) => {
      const raw = parse(fs.readFileSync(path.join(dir, file), 'utf8')) as unknown;
      if (!validate(raw)) {
        const e = validate.errors?.[0];
        throw new ConfigurationError(`${file}: ${e?.instancePath || '(root)'} ${e?.message ?? 'is invalid'}`, { file });
      }
      const agent = raw as unknown as AgentYaml;
      const stray = (agent.bridge_tools ?? []).findIndex((t) => !agent.enabled_tools.includes(t));
      if (stray >= 0)
        throw new ConfigurationError(
          `${file}: /bridge_tools/${stray} "${agent.bridge_tools![stray]}" is not in enabled_tools`,
          { file },
        );
      const { mode, consensus: c } = raw as { mode?: unknown; consensus?: unknown };
      const consensus = consensusConfigError(mode, c);
      if (consensus) throw new ConfigurationError(`${file}: ${consensus}`, { file });
      return toAgentSpec(agent, modelPolicyOverride);
    });
}

/** `mcp_servers` as grants: a plain list allows every tool; null when the file names none. */
function yamlGrants(a: AgentYaml): McpServerGrant[] | null {
  if (a.mcp_servers === undefined) return null;
  if (Array.isArray(a.mcp_servers))
    return a.mcp_servers.map((serverId) => ({ serverId, default: 'allow' as const, tools: {} }));
  return Object.entries(a.mcp_servers)
    .map(([serverId, g]) => ({
      serverId,
      default: g.default,
      tools: g.tools ?? {},
      ...(g.rules && Object.keys(g.rules).length > 0 ? { rules: g.rules } : {}),
    }))
    .sort((x, y) => (x.serverId < y.serverId ? -1 : 1));
}

function limitsOf(l: AgentYaml['limits']): AgentSpec['limits'] {
  return {
    maxSteps: l.max_steps,
    maxModelCalls: l.max_model_calls,
    maxToolCalls: l.max_tool_calls,
    maxInputTokens: l.max_input_tokens ?? null,
    maxOutputTokens: l.max_output_tokens ?? null,
    maxCost: l.max_cost ?? null,
    deadlineSeconds: l.deadline_seconds ?? null,
  };
}

/** One validated agent file as the spec the catalog stores. */
function toAgentSpec(a: AgentYaml, modelPolicyOverride: string | null): AgentSpec {
  const grants = yamlGrants(a);
  const mcpServers = grants?.map((g) => g.serverId) ?? [];
  const spec = baseSpec(a, modelPolicyOverride, grants, mcpServers);
  if (a.allowed_scopes === undefined) return spec;
  // Stored in the metadata column too (no schema change); toSpec reads it back.
  const allowedScopes = [...a.allowed_scopes].sort();
  return { ...spec, allowedScopes, metadata: { ...spec.metadata, allowed_scopes: allowedScopes } };
}

function baseSpec(
  a: AgentYaml,
  modelPolicyOverride: string | null,
  grants: McpServerGrant[] | null,
  mcpServers: string[],
): AgentSpec {
  return {
    id: a.id,
    version: a.version,
    name: a.name,
    instructions: a.instructions,
    modelPolicy: modelPolicyOverride ?? a.model_policy,
    enabledTools: a.enabled_tools,
    enabledSkills: a.enabled_skills ?? [],
    mcpServers,
    ...(grants ? { mcpGrants: grants } : {}),
    policyProfile: a.policy_profile,
    limits: limitsOf(a.limits),
    ...(a.multitask_strategy ? { multitaskStrategy: a.multitask_strategy } : {}),
    // The grant, the delegation settings and the multitask strategy are stored in the metadata column (no schema change);
    // toSpec reads them back.
    metadata: {
      ...(grants === null
        ? (a.metadata ?? {})
        : Array.isArray(a.mcp_servers)
          ? { ...a.metadata, mcp_servers: mcpServers }
          : { ...a.metadata, mcp_servers: mcpServers, mcp_grants: grants }),
      ...(a.delegation ? { delegation: a.delegation } : {}),
      ...(a.mode ? { mode: a.mode } : {}),
      ...(a.consensus ? { consensus: a.consensus } : {}),
      ...(a.multitask_strategy ? { multitask_strategy: a.multitask_strategy } : {}),
      ...(a.bridge_tools ? { bridge_tools: a.bridge_tools } : {}),
    },
  };
}

/** The metadata keys that change what a run of the agent may do; a stored version must match them. */
const BEHAVIOUR_METADATA = [
  'mcp_grants',
  'allowed_scopes',
  'delegation',
  'mode',
  'consensus',
  'multitask_strategy',
  'bridge_tools',
] as const;

/** Whether a stored agent version differs from its file (jsonb reorders object keys: canonical forms). */
function differsFromStored(
  e: { instructions: string; enabled_tools: unknown; limits: unknown; metadata: Record<string, unknown> | null },
  a: AgentSpec,
): boolean {
  return (
    e.instructions !== a.instructions ||
    canonical(e.enabled_tools) !== canonical(a.enabledTools) ||
    canonical(e.limits) !== canonical(a.limits) ||
    canonical(e.metadata?.mcp_servers ?? []) !== canonical(a.mcpServers ?? []) ||
    BEHAVIOUR_METADATA.some((k) => canonical(e.metadata?.[k] ?? null) !== canonical(a.metadata[k] ?? null))
  );
}

/** How long the newest version of an agent is taken as known before it is read again. */
const NEWEST_TTL_MS = 1000;
/** Distinct agent versions (and ids) memoized; a handful in practice. */
const MAX_MEMOIZED = 256;

/**
 * Agents from versioned YAML, persisted with their version before use. Changing an agent without
 * bumping its version is refused at startup, so a version always means one definition.
 */
export class YamlAgentCatalog implements AgentCatalog {
  /** Stored versions by `id\0version` (immutable). */
  private readonly versions = new Map<string, AgentSpec>();
  /** The newest stored version of each agent id, and when it was read. */
  private readonly newest = new Map<string, { readonly spec: AgentSpec; readonly at: number }>();

  private constructor(
    private readonly db: Database,
    private readonly modelPolicyOverride: string | null,
  ) {}

  /**
   * `modelPolicyOverride` (AGENT_MODEL_POLICY) applies to every agent version at read time, so it
   * takes effect for new runs whenever it is set — not only when a version is first stored.
   */
  static async open(
    db: Database,
    specs: readonly AgentSpec[],
    modelPolicyOverride: string | null = null,
  ): Promise<YamlAgentCatalog> {
    for (const a of specs) {
      const row = [
        a.id,
        a.version,
        a.name,
        a.instructions,
        a.modelPolicy,
        JSON.stringify(a.enabledTools),
        JSON.stringify(a.enabledSkills),
        a.policyProfile,
        JSON.stringify(a.limits),
        JSON.stringify(a.metadata),
      ];
      const inserted = await db.query(
        `INSERT INTO agents (id, version, name, instructions, model_policy, enabled_tools, enabled_skills, policy_profile, limits, metadata)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id, version) DO NOTHING`,
        row,
      );
      if (inserted.rowCount === 0) {
        const existing = await db.query<{
          instructions: string;
          enabled_tools: unknown;
          limits: unknown;
          metadata: Record<string, unknown> | null;
        }>('SELECT instructions, enabled_tools, limits, metadata FROM agents WHERE id = $1 AND version = $2', [
          a.id,
          a.version,
        ]);
        if (differsFromStored(existing.rows[0], a)) {
          throw new ConfigurationError(
            `agent ${a.id} v${a.version} differs from the stored v${a.version}; bump its version`,
            { agentId: a.id },
          );
        }
      }
    }
    return new YamlAgentCatalog(db, modelPolicyOverride);
  }

  async current(agentId: string): Promise<AgentSpec | null> {
    const spec = await this.newestStored(agentId);
    return spec ? this.withOverride(spec) : null;
  }

  async get(agentId: string, version: number): Promise<AgentSpec | null> {
    const spec = await this.getStored(agentId, version);
    return spec ? this.withOverride(spec) : null;
  }

  /**
   * The agent as a command needs it (ADR 0053): the stored version (the newest for a null
   * `version`) with the model policy override, without the operator MCP grants, which only a run's
   * tools need (the run reads them when it starts). Both reads are memoized, so a command reads no
   * agent row once the process has seen the version.
   */
  async definition(agentId: string, version: number | null): Promise<AgentSpec | null> {
    const spec = version === null ? await this.newestStored(agentId) : await this.getStored(agentId, version);
    return spec && this.modelPolicyOverride ? { ...spec, modelPolicy: this.modelPolicyOverride } : spec;
  }

  /**
   * The stored version without the run-time overlay, memoized: a stored version never changes (a
   * definition that differs from its stored version is refused at startup).
   */
  async getStored(agentId: string, version: number): Promise<AgentSpec | null> {
    const key = `${agentId}\u0000${version}`;
    const hit = this.versions.get(key);
    if (hit) return hit;
    const r = await this.db.query('SELECT * FROM agents WHERE id = $1 AND version = $2', [agentId, version]);
    const spec = r.rows[0] ? toSpec(r.rows[0]) : null;
    if (spec) this.remember(key, spec);
    return spec;
  }

  /**
   * The newest stored version, re-read at most every NEWEST_TTL_MS: a newer version appears only
   * when a process starts with a newer agent file, and a session created within that interval of it
   * is bound to the version before, as it would have been a moment earlier.
   */
  private async newestStored(agentId: string): Promise<AgentSpec | null> {
    const hit = this.newest.get(agentId);
    if (hit && performance.now() - hit.at < NEWEST_TTL_MS) return hit.spec;
    const r = await this.db.query('SELECT * FROM agents WHERE id = $1 ORDER BY version DESC LIMIT 1', [agentId]);
    const spec = r.rows[0] ? toSpec(r.rows[0]) : null;
    if (spec) {
      this.remember(`${spec.id}\u0000${spec.version}`, spec);
      if (this.newest.size >= MAX_MEMOIZED) this.newest.clear();
      this.newest.set(agentId, { spec, at: performance.now() });
    }
    return spec;
  }

  private remember(key: string, spec: AgentSpec): void {
    if (this.versions.size >= MAX_MEMOIZED) this.versions.delete(this.versions.keys().next().value!);
    this.versions.set(key, spec);
  }

  /** Operator MCP grants (read now unless given) and the model policy override. */
  withLive(spec: AgentSpec, operatorGrants?: readonly McpServerGrant[]): Promise<AgentSpec> {
    return this.withOverride(spec, operatorGrants);
  }

  /**
   * Operator grants (`agent_mcp_grants`, written by `PUT /v1/agents/{id}/mcp-grants/{server}`)
   * replace the agent file's grant for their server, for every version of the agent.
   */
  private async withOverride(spec: AgentSpec, given?: readonly McpServerGrant[]): Promise<AgentSpec> {
    const operator = given ?? (await this.operatorGrants(spec.id));
    let out = this.modelPolicyOverride ? { ...spec, modelPolicy: this.modelPolicyOverride } : spec;
    if (operator.length > 0) {
      let grants: McpServerGrant[] = [...mcpGrantsOf(spec)];
      for (const g of operator) grants = withGrant(grants, g);
      out = { ...out, mcpGrants: grants, mcpServers: grants.map((g) => g.serverId) };
    }
    return out;
  }

  private async operatorGrants(agentId: string): Promise<McpServerGrant[]> {
    const rows = await this.db.query<{
      server_id: string;
      default_decision: GrantDecision;
      tools: Record<string, GrantDecision>;
      rules: McpServerGrant['rules'];
    }>('SELECT server_id, default_decision, tools, rules FROM agent_mcp_grants WHERE agent_id = $1', [agentId]);
    return rows.rows.map((row) => ({
      serverId: row.server_id,
      default: row.default_decision,
      tools: row.tools,
      ...(row.rules && Object.keys(row.rules).length > 0 ? { rules: row.rules } : {}),
    }));
  }
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

function toSpec(r: Record<string, unknown>): AgentSpec {
  return {
    id: String(r.id),
    version: Number(r.version),
    name: String(r.name),
    instructions: String(r.instructions),
    modelPolicy: String(r.model_policy),
    enabledTools: r.enabled_tools as string[],
    enabledSkills: r.enabled_skills as string[],
    policyProfile: String(r.policy_profile),
    limits: r.limits as AgentSpec['limits'],
    mcpServers: mcpServersOf(r.metadata),
    ...grantsOf(r.metadata),
    ...allowedScopesOf(r.metadata),
    ...strategyOf(r.metadata),
    ...bridgeToolsOf(r.metadata),
    metadata: r.metadata as Record<string, unknown>,
  };
}

function bridgeToolsOf(metadata: unknown): { bridgeTools?: string[] } {
  const v = (metadata as { bridge_tools?: unknown } | null)?.bridge_tools;
  return Array.isArray(v) ? { bridgeTools: v.filter((t): t is string => typeof t === 'string') } : {};
}

function strategyOf(metadata: unknown): { multitaskStrategy?: MultitaskStrategy } {
  const v = (metadata as { multitask_strategy?: unknown } | null)?.multitask_strategy;
  return isMultitaskStrategy(v) ? { multitaskStrategy: v } : {};
}

function grantsOf(metadata: unknown): { mcpGrants?: McpServerGrant[] } {
  const v = (metadata as { mcp_grants?: unknown } | null)?.mcp_grants;
  return Array.isArray(v) ? { mcpGrants: v as McpServerGrant[] } : {};
}

function allowedScopesOf(metadata: unknown): { allowedScopes?: string[] } {
  const v = (metadata as { allowed_scopes?: unknown } | null)?.allowed_scopes;
  return Array.isArray(v) ? { allowedScopes: v.filter((x): x is string => typeof x === 'string') } : {};
}

function mcpServersOf(metadata: unknown): string[] {
  const v = (metadata as { mcp_servers?: unknown } | null)?.mcp_servers;
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
