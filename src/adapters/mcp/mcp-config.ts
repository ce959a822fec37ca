import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { ConfigurationError } from '../../domain/errors';
import { checkServerEntry } from './entry-checks';
import type { IdempotencyClass, RiskLevel, SideEffectClass } from '../../domain/tools/tool-spec';

/**
 * `config/mcp.yaml` (docs/mcp.md): versioned list of MCP servers over stdio or Streamable HTTP.
 * A malformed file is refused at startup with a ConfigurationError naming the server and field.
 */
export const MCP_CONFIG_VERSION = 1;

/** Builtin tool domains and names reserved for the platform; an MCP server id may not take them. */
export const RESERVED_DOMAINS: readonly string[] = [
  'math',
  'system',
  'workspace',
  'demo',
  'conversation',
  'mcp',
  'skill',
  'agent',
  'run',
];

export interface McpClassification {
  readonly sideEffect: SideEffectClass;
  readonly risk: RiskLevel;
  readonly idempotency: IdempotencyClass;
  readonly requiredScopes: readonly string[];
}

/** What an unclassified MCP tool gets: an external write, so the default policy requires approval. */
export const UNCLASSIFIED: McpClassification = {
  sideEffect: 'external_write',
  risk: 'high',
  idempotency: 'non_idempotent',
  requiredScopes: [],
};

/**
 * Where an HTTP server's credential comes from: the NAME of an environment variable, read at each
 * request (never at load, never stored in config objects, events or logs), sent as
 * `<header>: <scheme> <value>` (or the bare value when `scheme` is empty).
 */
export interface McpHttpAuth {
  readonly env: string;
  readonly header: string;
  readonly scheme: string;
}

/** MCP protocol versions this client can speak (the SDK's supported list); `protocol_version` pins one. */
export const MCP_PROTOCOL_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

/**
 * Which MCP era a server is spoken to in (ClotoCore §3.1.3, ADR 0051): `auto` probes with
 * `server/discover` and falls back to the `initialize` handshake; `legacy` skips the probe;
 * `modern` requires the stateless 2026-07-28 revision and fails the connect otherwise.
 */
export const MCP_PROTOCOL_ERAS = ['auto', 'legacy', 'modern'] as const;
export type McpProtocolEra = (typeof MCP_PROTOCOL_ERAS)[number];

export type RestartStrategy = 'on_failure' | 'always' | 'never';

/**
 * What happens when a server exits or fails (ClotoCore §3.1.2): `on_failure` restarts after a crash,
 * a failed start, a failed health check or a lost HTTP connection, not after a clean exit (code 0);
 * `always` restarts after any exit; `never` marks the server failed at its first failure. Restarts
 * back off `baseDelayMs · 2^(n-1)` capped at `maxDelayMs`; more than `maxRestarts` failures inside
 * the rolling `windowMs` and the server is marked failed.
 */
export interface RestartPolicy {
  readonly strategy: RestartStrategy;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxRestarts: number;
  readonly windowMs: number;
}

/** The one definition of the restart defaults (a server entry's `restart` overrides field by field). */
export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  strategy: 'on_failure',
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  maxRestarts: 5,
  windowMs: 300_000,
};

/**
 * How a stdio server's process is isolated (ADR 0048): `none` runs it as a plain child (trusted local
 * tools; the default); `namespace` runs it under bubblewrap, as the sandbox does, seeing only `/usr`,
 * the loader's `/etc` files and its declared `paths`, with no network unless `network: true`;
 * `gvisor` runs it in a gVisor sandbox (`runsc`) with the same view, refused where runsc is missing.
 */
export type McpIsolationProfile = 'none' | 'namespace' | 'gvisor';
export const MCP_ISOLATION_PROFILES: readonly McpIsolationProfile[] = ['none', 'namespace', 'gvisor'];

export interface McpIsolation {
  readonly profile: McpIsolationProfile;
  /** Absolute host paths the server sees read-only, at the same place. */
  readonly paths: readonly string[];
  /** Absolute host paths the server sees writable, at the same place. */
  readonly writablePaths: readonly string[];
  /** Whether the server keeps the host's network (default false: a network namespace of its own). */
  readonly network: boolean;
}

/** What an entry without `isolation` gets: a plain child process. */
export const NO_ISOLATION: McpIsolation = { profile: 'none', paths: [], writablePaths: [], network: true };

export interface McpServerConfig {
  readonly id: string;
  readonly transport: 'stdio' | 'http';
  /** stdio only ('' for http). */
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string | null;
  /** Names of parent environment variables passed to the child; it gets nothing else. */
  readonly envAllowlist: readonly string[];
  /** stdio only: how the process is isolated (`isolation`, `paths`, `writable_paths`, `network`). */
  readonly isolation: McpIsolation;
  /** http only: the Streamable HTTP endpoint. */
  readonly url: string | null;
  /** http only: the auth reference, or null for none. */
  readonly auth: McpHttpAuth | null;
  /** A pinned protocol version for the initialize handshake, or null to offer the newest. */
  readonly protocolVersion: string | null;
  /** `protocol_era` (default `auto`): probe with `server/discover`, or skip it (`legacy`), or require it (`modern`). */
  readonly protocolEra: McpProtocolEra;
  readonly startupTimeoutMs: number;
  readonly callTimeoutSeconds: number;
  /** Health ping period while ready (`health_interval_seconds`, default 30 s); 0 disables the pings. */
  readonly healthIntervalMs: number;
  /** How long one health ping may take before the server counts as failed (`health_timeout_seconds`, default 5 s). */
  readonly healthTimeoutMs: number;
  readonly maxOutputBytes: number;
  /** `restart` of the entry over DEFAULT_RESTART_POLICY. */
  readonly restart: RestartPolicy;
  /** Server-wide classification; null when the operator gave none (tools then default to UNCLASSIFIED). */
  readonly classification: McpClassification | null;
  /** Per MCP tool name (as the server spells it). */
  readonly tools: Readonly<Record<string, McpClassification>>;
}

export interface McpConfig {
  readonly version: number;
  readonly servers: readonly McpServerConfig[];
}

const classificationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['side_effect', 'risk', 'idempotency'],
  properties: {
    side_effect: { enum: ['none', 'read', 'workspace_write', 'external_write', 'control'] },
    risk: { enum: ['low', 'medium', 'high', 'critical'] },
    idempotency: { enum: ['read_only', 'idempotent', 'conditional', 'non_idempotent'] },
    required_scopes: { type: 'array', items: { type: 'string', minLength: 1 } },
  },
};

const restartSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    strategy: { enum: ['on_failure', 'always', 'never'] },
    max_restarts: { type: 'integer', minimum: 0, maximum: 1000 },
    restart_window_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 86400 },
    backoff_base_ms: { type: 'integer', minimum: 0, maximum: 3_600_000 },
    backoff_max_ms: { type: 'integer', minimum: 0, maximum: 3_600_000 },
  },
};

const serverSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'transport'],
  properties: {
    id: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,31}$' },
    transport: {
      type: 'object',
      required: ['type'],
      properties: { type: { enum: ['stdio', 'http'] } },
      if: { properties: { type: { const: 'http' } } },
      then: {
        additionalProperties: false,
        required: ['type', 'url'],
        properties: {
          type: { const: 'http' },
          url: { type: 'string', minLength: 1 },
          auth: {
            type: 'object',
            additionalProperties: false,
            required: ['env'],
            properties: {
              env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
              header: { type: 'string', pattern: '^[A-Za-z0-9-]+$' },
              scheme: { type: 'string', pattern: '^[A-Za-z0-9-]*$' },
            },
          },
        },
      },
      else: {
        additionalProperties: false,
        required: ['type', 'command'],
        properties: {
          type: { const: 'stdio' },
          command: { type: 'string', minLength: 1 },
          args: { type: 'array', items: { type: 'string' } },
          cwd: { type: 'string', minLength: 1 },
          env_allowlist: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' } },
        },
      },
    },
    protocol_version: { enum: MCP_PROTOCOL_VERSIONS },
    protocol_era: { enum: MCP_PROTOCOL_ERAS },
    isolation: { enum: MCP_ISOLATION_PROFILES },
    paths: { type: 'array', items: { type: 'string', minLength: 1 } },
    writable_paths: { type: 'array', items: { type: 'string', minLength: 1 } },
    network: { type: 'boolean' },
    startup_timeout_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 300 },
    call_timeout_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 3600 },
    health_interval_seconds: { type: 'number', minimum: 0, maximum: 86400 },
    health_timeout_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 300 },
    max_output_bytes: { type: 'integer', minimum: 256, maximum: 16777216 },
    restart: restartSchema,
    classification: classificationSchema,
    tools: { type: 'object', additionalProperties: classificationSchema },
  },
};

const fileSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'servers'],
  properties: {
    version: { const: MCP_CONFIG_VERSION },
    servers: { type: 'array', items: serverSchema },
  },
};

/** `${ENV_VAR}`, `${config}` (the config directory) and `${node}` (this Node binary) in command, args and cwd. */
function expand(value: string, vars: Readonly<Record<string, string>>, where: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = vars[name];
    if (v === undefined) throw new ConfigurationError(`${where} references \${${name}}, which is not set`, { where });
    return v;
  });
}

interface RawClassification {
  side_effect: SideEffectClass;
  risk: RiskLevel;
  idempotency: IdempotencyClass;
  required_scopes?: string[];
}

function classification(raw: RawClassification | undefined): McpClassification | null {
  if (raw === undefined) return null;
  return {
    sideEffect: raw.side_effect,
    risk: raw.risk,
    idempotency: raw.idempotency,
    requiredScopes: raw.required_scopes ?? [],
  };
}

interface RawRestart {
  strategy?: RestartStrategy;
  max_restarts?: number;
  restart_window_seconds?: number;
  backoff_base_ms?: number;
  backoff_max_ms?: number;
}

/** A server's `restart` over the defaults; a cap below the base is refused naming the field. */
function restartPolicy(s: RawServer, source: string): RestartPolicy {
  const r = s.restart ?? {};
  const d = DEFAULT_RESTART_POLICY;
  const policy: RestartPolicy = {
    strategy: r.strategy ?? d.strategy,
    maxRestarts: r.max_restarts ?? d.maxRestarts,
    windowMs: r.restart_window_seconds === undefined ? d.windowMs : Math.round(r.restart_window_seconds * 1000),
    baseDelayMs: r.backoff_base_ms ?? d.baseDelayMs,
    maxDelayMs: r.backoff_max_ms ?? d.maxDelayMs,
  };
  if (policy.maxDelayMs < policy.baseDelayMs)
    throw new ConfigurationError(
      `${source}: server ${s.id}: field restart.backoff_max_ms: must not be below restart.backoff_base_ms (${policy.baseDelayMs})`,
      { server: s.id, field: 'restart.backoff_max_ms' },
    );
  return policy;
}

/** One server entry of mcp.yaml as the schema admits it. */
interface RawServer {
  id: string;
  transport: {
    type: 'stdio' | 'http';
    command?: string;
    args?: string[];
    cwd?: string;
    env_allowlist?: string[];
    url?: string;
    auth?: { env: string; header?: string; scheme?: string };
  };
  protocol_version?: string;
  protocol_era?: McpProtocolEra;
  isolation?: McpIsolationProfile;
  paths?: string[];
  writable_paths?: string[];
  network?: boolean;
  startup_timeout_seconds?: number;
  call_timeout_seconds?: number;
  health_interval_seconds?: number;
  health_timeout_seconds?: number;
  max_output_bytes?: number;
  restart?: RawRestart;
  classification?: RawClassification;
  tools?: Record<string, RawClassification>;
}

/** What a server entry is read against: the file (for errors), `${VAR}` values and the config dir. */
interface ServerContext {
  readonly source: string;
  readonly vars: Readonly<Record<string, string>>;
  readonly configDir: string;
}

/** The file schema compiled once per process (run-time server changes validate entries often). */
let compiledFileSchema: ValidateFunction | null = null;
const fileValidator = (): ValidateFunction =>
  (compiledFileSchema ??= new Ajv({ allErrors: false, strict: false }).compile(fileSchema));

/** Parses and validates an already loaded document; `source` names it in errors. */
export function parseMcpConfig(
  raw: unknown,
  source: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
  configDir = path.dirname(source),
): McpConfig {
  const validate = fileValidator();
  if (!validate(raw)) throw schemaError(raw, validate.errors?.[0], source);
  const doc = raw as { version: number; servers: RawServer[] };
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) vars[k] = v;
  vars.config = configDir;
  vars.node = process.execPath;
  const ctx: ServerContext = { source, vars, configDir };
  const seen = new Set<string>();
  const servers = doc.servers.map((s) => {
    assertUsableId(s.id, seen, source);
    seen.add(s.id);
    checkServerEntry(s, source);
    return s.transport.type === 'http' ? httpServer(s, ctx) : stdioServer(s, ctx);
  });
  return { version: doc.version, servers };
}

/** The first schema error, naming the server (by id, else by position) and field when it is in one. */
function schemaError(raw: unknown, e: ErrorObject | undefined, source: string): ConfigurationError {
  const at = e?.instancePath ?? '';
  const m = /^\/servers\/(\d+)(\/.*)?$/.exec(at);
  const servers = (raw as { servers?: { id?: unknown }[] } | null)?.servers;
  const detail =
    e?.keyword === 'additionalProperties'
      ? `unknown field '${String((e.params as { additionalProperty?: string }).additionalProperty)}'`
      : e?.keyword === 'required'
        ? `missing field '${String((e.params as { missingProperty?: string }).missingProperty)}'`
        : e?.keyword === 'enum'
          ? `must be one of ${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).join(', ')}`
          : (e?.message ?? 'is invalid');
  if (!m) return new ConfigurationError(`${source}: ${at || '(root)'} ${detail}`, { file: source });
  const id = servers?.[Number(m[1])]?.id;
  const name = typeof id === 'string' ? id : `#${m[1]}`;
  const field = fieldOf(e, m[2]);
  return new ConfigurationError(`${source}: server ${name}: field ${field}: ${detail}`, { server: name, field });
}

/** The field of a schema error inside a server entry; an unknown field is named itself. */
function fieldOf(e: ErrorObject | undefined, at: string | undefined): string {
  const inEntry = (at ?? '').replace(/^\//, '').replace(/\//g, '.');
  const extra =
    e?.keyword === 'additionalProperties' ? (e.params as { additionalProperty?: string }).additionalProperty : '';
  return [inEntry, extra].filter(Boolean).join('.') || '(server)';
}

function assertUsableId(id: string, seen: ReadonlySet<string>, source: string): void {
  if (RESERVED_DOMAINS.includes(id))
    throw new ConfigurationError(`${source}: server ${id}: field id: collides with a builtin tool domain`, {
      server: id,
      field: 'id',
    });
  if (seen.has(id))
    throw new ConfigurationError(`${source}: server ${id}: field id: duplicate server id`, {
      server: id,
      field: 'id',
    });
}

/** The fields every transport shares, with their defaults. */
function commonFields(s: RawServer, source: string) {
  const tools: Record<string, McpClassification> = {};
  for (const [name, c] of Object.entries(s.tools ?? {})) tools[name] = classification(c)!;
  return {
    id: s.id,
    protocolVersion: s.protocol_version ?? null,
    protocolEra: s.protocol_era ?? 'auto',
    startupTimeoutMs: Math.round((s.startup_timeout_seconds ?? 20) * 1000),
    callTimeoutSeconds: s.call_timeout_seconds ?? 30,
    healthIntervalMs: Math.round((s.health_interval_seconds ?? 30) * 1000),
    healthTimeoutMs: Math.round((s.health_timeout_seconds ?? 5) * 1000),
    maxOutputBytes: s.max_output_bytes ?? 65_536,
    restart: restartPolicy(s, source),
    classification: classification(s.classification),
    tools,
  };
}

const where = (s: RawServer, ctx: ServerContext, field: string) => `${ctx.source}: server ${s.id}: field ${field}`;

function httpServer(s: RawServer, ctx: ServerContext): McpServerConfig {
  const at = where(s, ctx, 'transport.url');
  const refuse = (why: string) => new ConfigurationError(`${at}: ${why}`, { server: s.id, field: 'transport.url' });
  const url = expand(s.transport.url!, ctx.vars, at);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw refuse('not a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw refuse('must be an http(s) URL');
  if (parsed.username || parsed.password)
    throw refuse('must not embed credentials; use transport.auth with an environment variable');
  for (const field of ['isolation', 'paths', 'writable_paths', 'network'] as const)
    if (s[field] !== undefined && !(field === 'isolation' && s.isolation === 'none'))
      throw new ConfigurationError(`${where(s, ctx, field)}: only a stdio server runs locally and can be isolated`, {
        server: s.id,
        field,
      });
  const a = s.transport.auth;
  return {
    ...commonFields(s, ctx.source),
    transport: 'http' as const,
    command: '',
    args: [],
    cwd: null,
    envAllowlist: [],
    isolation: NO_ISOLATION,
    url: parsed.toString(),
    auth: a ? { env: a.env, header: a.header ?? 'Authorization', scheme: a.scheme ?? 'Bearer' } : null,
  };
}

function stdioServer(s: RawServer, ctx: ServerContext): McpServerConfig {
  const { vars, configDir } = ctx;
  return {
    ...commonFields(s, ctx.source),
    transport: 'stdio' as const,
    command: expand(s.transport.command!, vars, where(s, ctx, 'transport.command')),
    args: (s.transport.args ?? []).map((a, i) => expand(a, vars, where(s, ctx, `transport.args.${i}`))),
    cwd:
      s.transport.cwd === undefined
        ? null
        : path.resolve(configDir, expand(s.transport.cwd, vars, where(s, ctx, 'transport.cwd'))),
    envAllowlist: s.transport.env_allowlist ?? [],
    isolation: isolation(s, ctx),
    url: null,
    auth: null,
  };
}

/**
 * A stdio entry's `isolation` with its `paths` (relative to the config dir, `${VAR}` expanded).
 * Paths, writable paths or `network` without an isolating profile are refused (they would not
 * restrict anything), and so is a `cwd` the isolated server could not see.
 */
function isolation(s: RawServer, ctx: ServerContext): McpIsolation {
  const profile = s.isolation ?? 'none';
  if (profile === 'none') {
    for (const field of ['paths', 'writable_paths', 'network'] as const)
      if (s[field] !== undefined)
        throw new ConfigurationError(
          `${where(s, ctx, field)}: only for isolation namespace or gvisor (this server runs with isolation none)`,
          { server: s.id, field },
        );
    return NO_ISOLATION;
  }
  const resolve = (list: string[] | undefined, field: string) =>
    (list ?? []).map((p, i) => {
      const at = where(s, ctx, `${field}.${i}`);
      const abs = path.resolve(ctx.configDir, expand(p, ctx.vars, at));
      if (abs === '/')
        throw new ConfigurationError(`${at}: / would show the server the whole host`, { server: s.id, field });
      return abs;
    });
  const paths = resolve(s.paths, 'paths');
  const writablePaths = resolve(s.writable_paths, 'writable_paths');
  if (s.transport.cwd !== undefined) {
    const cwd = path.resolve(ctx.configDir, expand(s.transport.cwd, ctx.vars, where(s, ctx, 'transport.cwd')));
    if (![...paths, ...writablePaths].some((p) => cwd === p || cwd.startsWith(`${p}/`)))
      throw new ConfigurationError(
        `${where(s, ctx, 'transport.cwd')}: an isolated server's cwd must be inside one of its paths`,
        { server: s.id, field: 'transport.cwd' },
      );
  }
  return { profile, paths, writablePaths, network: s.network ?? false };
}

/** Reads `<configDir>/mcp.yaml`; a missing file means no servers. */
export function loadMcpConfig(
  configDir: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): McpConfig {
  const file = path.join(configDir, 'mcp.yaml');
  if (!fs.existsSync(file)) return { version: MCP_CONFIG_VERSION, servers: [] };
  let raw: unknown;
  try {
    raw = parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigurationError(`${file}: not valid YAML: ${(e as Error).message}`, { file }, { cause: e });
  }
  return parseMcpConfig(raw, file, env, configDir);
}
