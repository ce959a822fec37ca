import * as path from 'node:path';
import { ConfigurationError } from '../domain/errors';
import { type ArtifactStoreSettings, loadArtifactStoreSettings } from './artifact-settings';
import { projectRoot } from './project-root';

/**
 * Settings that differ between deployments (everything else is versioned YAML under config/).
 * Every knob is listed and explained in .env.example.
 */
export interface Settings {
  readonly databaseUrl: string | null;
  /**
   * The query pools' URL when they go through a transaction-mode pooler (`DATABASE_POOL_URL`,
   * PgBouncer); `databaseUrl` then serves LISTEN, migrations and rebuilds only (docs/operations/pooling.md).
   */
  readonly databasePoolUrl: string | null;
  /** Where `agent backup` keeps backups (`AGENT_BACKUP_DIR`, default `$AGENT_DATA_DIR/backups`). */
  readonly backupDir: string;
  /** Where `agent backup` finds pg_dump / pg_restore (`AGENT_PG_BIN_DIR`); null: Debian's, then PATH. */
  readonly pgBinDir: string | null;
  /** Connections in each process's query pool (`DATABASE_POOL_SIZE`, default 10; docs/operations/pooling.md). */
  readonly databasePoolSize: number;
  /**
   * The query pool's bounded waits: for a connection (`DATABASE_CONNECT_TIMEOUT_MS`, default 10000)
   * and for a query's answer (`DATABASE_QUERY_TIMEOUT_MS`, default 60000, 0 for none); docs/operations/ha.md.
   */
  readonly databaseTimeouts: { readonly connectMs: number; readonly queryMs: number };
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly logLevel: string;
  readonly workerConcurrency: number;
  readonly leaseSeconds: number;
  readonly pollIntervalMs: number;
  readonly fakeModelLatencyMs: number;
  readonly defaultAgentId: string;
  readonly openaiApiKeySet: boolean;
  readonly anthropicApiKeySet: boolean;
  readonly configDir: string;
  /** `dev`: loopback requests only, as the fixed local principal; `token`: bearer tokens from AUTH_TOKENS_FILE. */
  readonly authMode: AuthMode;
  readonly authTokensFile: string | null;
  /** Largest accepted request body, in bytes (413 above it). */
  readonly apiBodyLimitBytes: number;
  /** Requests per minute per tenant on one API process; 0 disables the limit. */
  readonly apiRateLimitPerMinute: number;
  /** Non-terminal runs a tenant may have at once before submissions get 429; 0 disables it. */
  readonly apiMaxActiveRunsPerTenant: number;
  /** Seconds between SSE comment heartbeats. */
  readonly sseHeartbeatSeconds: number;
  /** Root of the artifact store (`AGENT_ARTIFACT_DIR`, default `$AGENT_DATA_DIR/artifacts`); outside the source tree. */
  readonly artifactDir: string;
  /** Where artifact bytes live: `fs` (artifactDir) or an S3 bucket (`ARTIFACT_STORE=s3`, S3_*; ADR 0045). */
  readonly artifactStore: ArtifactStoreSettings;
  /** Seconds between expiry sweeps of the artifact store in each worker (`AGENT_ARTIFACT_SWEEP_SECONDS`); 0 disables. */
  readonly artifactSweepSeconds: number;
  /** How long an oversized tool result kept as an artifact lives (`AGENT_ARTIFACT_TOOL_RESULT_TTL_SECONDS`); 0 keeps it. */
  readonly artifactToolResultTtlSeconds: number;
  /**
   * How long an operator MCP action (`POST /v1/mcp/servers/{id}/start|stop|restart`) waits for the
   * other processes to acknowledge it (`AGENT_MCP_CONTROL_ACK_TIMEOUT_MS`, default 10000).
   */
  readonly mcpControlAckTimeoutMs: number;
  /** Which compactor summarises history under pressure (`CONTEXT_COMPACTOR`, default `extractive`); docs/adr/0017. */
  readonly contextCompactor: ContextCompactorKind;
  /** The model policy the `model` compactor calls (`CONTEXT_COMPACTOR_MODEL_POLICY`); null: the run's own route. */
  readonly contextCompactorModelPolicy: string | null;
  /**
   * `delegate.run` for every agent that does not opt out (`DELEGATION_ENABLED=1`; default off, ADR 0037).
   * An agent's `delegation.enabled` in its YAML decides for that agent either way.
   */
  readonly delegationEnabled: boolean;
  /** How often each worker sweeps for joins and orphaned children a lost NOTIFY left (`DELEGATION_SWEEP_MS`). */
  readonly delegationSweepMs: number;
}

export type ContextCompactorKind = 'extractive' | 'model';

function compactorFrom(env: NodeJS.ProcessEnv): ContextCompactorKind {
  const raw = (env.CONTEXT_COMPACTOR ?? '').trim();
  if (raw === '' || raw === 'extractive') return 'extractive';
  if (raw === 'model') return 'model';
  throw new ConfigurationError(`CONTEXT_COMPACTOR must be "extractive" or "model", got "${raw}"`, {
    name: 'CONTEXT_COMPACTOR',
  });
}

export type AuthMode = 'dev' | 'token';

function authModeFrom(env: NodeJS.ProcessEnv): AuthMode {
  const raw = (env.AUTH_MODE ?? '').trim();
  if (raw === '' || raw === 'dev') return 'dev';
  if (raw === 'token') return 'token';
  throw new ConfigurationError(`AUTH_MODE must be "dev" or "token", got "${raw}"`, { name: 'AUTH_MODE' });
}

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new ConfigurationError(`${name} must be an integer >= ${min}, got "${raw}"`, { name });
  return n;
}

function poolUrlFrom(env: NodeJS.ProcessEnv): string | null {
  const raw = env.DATABASE_POOL_URL?.trim();
  if (!raw) return null;
  if (!env.DATABASE_URL?.trim())
    throw new ConfigurationError(
      'DATABASE_POOL_URL needs DATABASE_URL too: LISTEN, migrations and rebuilds use a direct connection',
      { name: 'DATABASE_POOL_URL' },
    );
  return raw;
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const dataDir = env.AGENT_DATA_DIR ? path.resolve(env.AGENT_DATA_DIR) : path.join(projectRoot(), '.data');
  return {
    databaseUrl: env.DATABASE_URL && env.DATABASE_URL.trim() !== '' ? env.DATABASE_URL.trim() : null,
    databasePoolUrl: poolUrlFrom(env),
    databasePoolSize: intFrom(env, 'DATABASE_POOL_SIZE', 10, 1),
    databaseTimeouts: {
      connectMs: intFrom(env, 'DATABASE_CONNECT_TIMEOUT_MS', 10_000, 100),
      queryMs: intFrom(env, 'DATABASE_QUERY_TIMEOUT_MS', 60_000),
    },
    backupDir: env.AGENT_BACKUP_DIR?.trim() ? path.resolve(env.AGENT_BACKUP_DIR.trim()) : path.join(dataDir, 'backups'),
    pgBinDir: env.AGENT_PG_BIN_DIR?.trim() ? path.resolve(env.AGENT_PG_BIN_DIR.trim()) : null,
    dataDir,
    host: env.HOST ?? '127.0.0.1',
    port: intFrom(env, 'PORT', 3000),
    logLevel: env.LOG_LEVEL ?? 'info',
    workerConcurrency: intFrom(env, 'AGENT_WORKER_CONCURRENCY', 4, 1),
    leaseSeconds: intFrom(env, 'AGENT_LEASE_SECONDS', 30, 3),
    pollIntervalMs: intFrom(env, 'AGENT_POLL_INTERVAL_MS', 5000, 100),
    fakeModelLatencyMs: intFrom(env, 'FAKE_MODEL_LATENCY_MS', 0),
    defaultAgentId: env.AGENT_DEFAULT_AGENT ?? 'general',
    openaiApiKeySet: Boolean(env.OPENAI_API_KEY),
    anthropicApiKeySet: Boolean(env.ANTHROPIC_API_KEY),
    configDir: path.resolve(env.AGENT_CONFIG_DIR ?? path.join(projectRoot(), 'config')),
    authMode: authModeFrom(env),
    authTokensFile:
      env.AUTH_TOKENS_FILE && env.AUTH_TOKENS_FILE.trim() !== '' ? path.resolve(env.AUTH_TOKENS_FILE.trim()) : null,
    apiBodyLimitBytes: intFrom(env, 'API_BODY_LIMIT_BYTES', 262_144, 1024),
    apiRateLimitPerMinute: intFrom(env, 'API_RATE_LIMIT_PER_MINUTE', 600),
    apiMaxActiveRunsPerTenant: intFrom(env, 'API_MAX_ACTIVE_RUNS_PER_TENANT', 20),
    sseHeartbeatSeconds: intFrom(env, 'SSE_HEARTBEAT_SECONDS', 15, 1),
    artifactDir: env.AGENT_ARTIFACT_DIR?.trim()
      ? path.resolve(env.AGENT_ARTIFACT_DIR.trim())
      : path.join(dataDir, 'artifacts'),
    artifactStore: loadArtifactStoreSettings(env),
    artifactSweepSeconds: intFrom(env, 'AGENT_ARTIFACT_SWEEP_SECONDS', 300),
    artifactToolResultTtlSeconds: intFrom(env, 'AGENT_ARTIFACT_TOOL_RESULT_TTL_SECONDS', 7 * 24 * 3600),
    mcpControlAckTimeoutMs: intFrom(env, 'AGENT_MCP_CONTROL_ACK_TIMEOUT_MS', 10_000),
    contextCompactor: compactorFrom(env),
    contextCompactorModelPolicy: env.CONTEXT_COMPACTOR_MODEL_POLICY?.trim() || null,
    delegationEnabled: flagFrom(env, 'DELEGATION_ENABLED'),
    delegationSweepMs: intFrom(env, 'DELEGATION_SWEEP_MS', 2000, 100),
  };
}

/** A boolean flag: 1/true/yes on, 0/false/no/unset off; anything else is a configuration error. */
function flagFrom(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new ConfigurationError(`${name} must be 1 or 0, got "${env[name]}"`, { name });
}

/** Loads `.env` from the working directory when present (Node's own loader; no extra dependency). */
export function loadDotEnv(): void {
  try {
    process.loadEnvFile?.('.env');
  } catch {
    /* no .env file: fine */
  }
}
