import { ConfigurationError } from '../domain/errors';

/** Scheduler and schedule-admission settings (ADR 0034, docs/schedules.md); every knob is in .env.example. */
export interface ScheduleSettings {
  /** `agent start` runs a scheduler (AGENT_SCHEDULER_ENABLED, default on; `agent scheduler` runs one alone). */
  readonly schedulerEnabled: boolean;
  /** An occurrence later than this past its instant is a misfire: coalesced, never replayed (seconds). */
  readonly misfireGraceSeconds: number;
  /** The scheduler's safety-net poll when no timer or NOTIFY wakes it (milliseconds). */
  readonly pollMs: number;
  /** Due schedules one scheduler transaction claims at most. */
  readonly batchSize: number;
  /** Firing loops per scheduler process (each claims with SKIP LOCKED). */
  readonly concurrency: number;
  /** Per-tenant admission at every firing; 0 or null turns a ceiling off. */
  readonly tenantMaxActiveRuns: number;
  readonly tenantMaxFiringsPerMinute: number;
  readonly tenantDailyCost: string | null;
  readonly tenantMonthlyCost: string | null;
}

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new ConfigurationError(`${name} must be an integer >= ${min}, got "${raw}"`, { name });
  return n;
}

function costFrom(env: NodeJS.ProcessEnv, name: string): string | null {
  const raw = (env[name] ?? '').trim();
  if (raw === '' || raw === '0') return null;
  if (!/^[0-9]+(\.[0-9]+)?$/.test(raw))
    throw new ConfigurationError(`${name} must be a decimal amount such as 5 or 2.50, got "${raw}"`, { name });
  return raw;
}

export function loadScheduleSettings(env: NodeJS.ProcessEnv = process.env): ScheduleSettings {
  const enabled = (env.AGENT_SCHEDULER_ENABLED ?? '').trim();
  if (!['', '0', '1', 'true', 'false'].includes(enabled))
    throw new ConfigurationError(`AGENT_SCHEDULER_ENABLED must be 1 or 0, got "${enabled}"`, {
      name: 'AGENT_SCHEDULER_ENABLED',
    });
  return {
    schedulerEnabled: enabled !== '0' && enabled !== 'false',
    misfireGraceSeconds: intFrom(env, 'AGENT_SCHEDULE_MISFIRE_GRACE_SECONDS', 60, 1),
    pollMs: intFrom(env, 'AGENT_SCHEDULER_POLL_MS', 30_000, 100),
    batchSize: intFrom(env, 'AGENT_SCHEDULER_BATCH', 20, 1),
    concurrency: intFrom(env, 'AGENT_SCHEDULER_CONCURRENCY', 2, 1),
    tenantMaxActiveRuns: intFrom(env, 'AGENT_SCHEDULE_TENANT_MAX_ACTIVE_RUNS', 10),
    tenantMaxFiringsPerMinute: intFrom(env, 'AGENT_SCHEDULE_TENANT_MAX_PER_MINUTE', 60),
    tenantDailyCost: costFrom(env, 'AGENT_SCHEDULE_TENANT_DAILY_COST'),
    tenantMonthlyCost: costFrom(env, 'AGENT_SCHEDULE_TENANT_MONTHLY_COST'),
  };
}
