import { AuthorizationError, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { RunLimits } from '../../domain/run/limits';
import { canonicalCadence, checkCadenceShape, type Cadence } from '../../domain/schedules/cadence';
import {
  DEFAULT_MAX_CONSECUTIVE_FAILURES,
  MISFIRE_POLICIES,
  type MisfirePolicy,
} from '../../domain/schedules/schedule';

/**
 * What a caller asks for, as the API and the schedule tools spell it (snake_case cadence and
 * limits, docs/schedules.md). Validated here, once, for every surface.
 */
export interface ScheduleRequest {
  readonly message?: unknown;
  readonly title?: unknown;
  readonly cadence?: unknown;
  readonly agent_id?: unknown;
  readonly limits?: unknown;
  readonly scopes?: unknown;
  readonly misfire?: unknown;
  readonly max_consecutive_failures?: unknown;
}

export const MAX_TITLE_CHARS = 200;
const MAX_IN_SECONDS = 366 * 24 * 3600;
const LIMIT_FIELDS: Readonly<Record<string, keyof RunLimits>> = {
  max_steps: 'maxSteps',
  max_model_calls: 'maxModelCalls',
  max_tool_calls: 'maxToolCalls',
  max_input_tokens: 'maxInputTokens',
  max_output_tokens: 'maxOutputTokens',
  max_cost: 'maxCost',
  deadline_seconds: 'deadlineSeconds',
};

function invalid(field: string, message: string): ValidationError {
  return new ValidationError(message, { field });
}

/**
 * The wire cadence as the domain's: `time_zone` → `timeZone`; `{kind: "once", in_seconds}` becomes
 * a one-time cadence at now + seconds (rounded up to the second, never earlier) in UTC.
 */
export function cadenceFromWire(raw: unknown, nowMs: number): Cadence {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw invalid('cadence', 'cadence must be an object with a kind');
  const { time_zone, in_seconds, ...rest } = raw as Record<string, unknown>;
  if (rest.kind === 'once' && in_seconds !== undefined) {
    if (rest.at !== undefined) throw invalid('cadence.in_seconds', 'give cadence.at or cadence.in_seconds, not both');
    if (!Number.isInteger(in_seconds) || (in_seconds as number) < 1 || (in_seconds as number) > MAX_IN_SECONDS)
      throw invalid('cadence.in_seconds', `cadence.in_seconds must be an integer from 1 to ${MAX_IN_SECONDS}`);
    const at = new Date(Math.ceil((nowMs + (in_seconds as number) * 1000) / 1000) * 1000).toISOString().slice(0, 19);
    // An exact instant: kept in UTC whatever zone was named (it has no civil meaning to preserve).
    return { kind: 'once', at, timeZone: 'UTC' };
  }
  if (in_seconds !== undefined) throw invalid('cadence.in_seconds', 'cadence.in_seconds is for kind "once" only');
  return canonicalCadence(checkCadenceShape({ ...rest, timeZone: time_zone }));
}

/** The domain cadence as the wire spells it. */
export function cadenceToWire(c: Cadence): Record<string, unknown> {
  const { timeZone, ...rest } = c;
  return { ...rest, time_zone: timeZone };
}

export function messageOf(raw: unknown, maxChars: number): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalid('message', 'message must be a non-empty string');
  if (raw.length > maxChars) throw invalid('message', `message is ${raw.length} characters; the limit is ${maxChars}`);
  return raw;
}

export function titleOf(raw: unknown, message: string): string {
  if (raw === undefined || raw === null) {
    const line = message.trim().split('\n')[0];
    return line.length > 60 ? `${line.slice(0, 59)}…` : line;
  }
  if (typeof raw !== 'string' || raw.trim() === '' || raw.length > MAX_TITLE_CHARS)
    throw invalid('title', `title must be 1 to ${MAX_TITLE_CHARS} characters`);
  return raw.trim();
}

/** The agent's limits with the caller's overrides; the result must have a finite deadline. */
export function limitsOf(raw: unknown, base: RunLimits): RunLimits {
  if (raw === undefined || raw === null) return finite(base);
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid('limits', 'limits must be an object');
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const field = LIMIT_FIELDS[k];
    if (!field) throw invalid(`limits.${k}`, `limits.${k} is not a limit; use ${Object.keys(LIMIT_FIELDS).join(', ')}`);
    if (field === 'maxCost') {
      if (v !== null && (typeof v !== 'string' || !/^[0-9]+(\.[0-9]+)?$/.test(v)))
        throw invalid('limits.max_cost', 'limits.max_cost must be a decimal string such as "0.50"');
    } else if (!Number.isInteger(v) || (v as number) < (field === 'maxToolCalls' ? 0 : 1)) {
      throw invalid(`limits.${k}`, `limits.${k} must be a positive integer`);
    }
    out[field] = v;
  }
  return finite(out as unknown as RunLimits);
}

function finite(l: RunLimits): RunLimits {
  if (l.deadlineSeconds === null)
    throw invalid('limits.deadline_seconds', 'a scheduled run needs a finite deadline: set limits.deadline_seconds');
  return l;
}

/**
 * The scopes the schedule requests: by default the creator's execution scopes; explicitly, only
 * scopes the creator holds (a schedule never grants more than its creator has).
 */
export function scopesOf(raw: unknown, principal: Principal, executionScopes: readonly string[]): string[] {
  if (raw === undefined || raw === null) return executionScopes.filter((s) => principal.scopes.has(s)).sort();
  if (!Array.isArray(raw) || !raw.every((s) => typeof s === 'string'))
    throw invalid('scopes', 'scopes must be a list of scope names');
  const missing = raw.filter((s) => !principal.scopes.has(s));
  if (missing.length > 0)
    throw new AuthorizationError(`a schedule cannot request scopes its creator lacks: ${missing.join(', ')}`, {
      field: 'scopes',
      missing,
    });
  return [...new Set(raw)].sort();
}

export function misfireOf(raw: unknown): MisfirePolicy {
  if (raw === undefined || raw === null) return 'run_once';
  if (!MISFIRE_POLICIES.includes(raw as MisfirePolicy))
    throw invalid('misfire', `misfire must be one of ${MISFIRE_POLICIES.join(', ')}`);
  return raw as MisfirePolicy;
}

export function maxFailuresOf(raw: unknown): number {
  if (raw === undefined || raw === null) return DEFAULT_MAX_CONSECUTIVE_FAILURES;
  if (!Number.isInteger(raw) || (raw as number) < 1 || (raw as number) > 100)
    throw invalid('max_consecutive_failures', 'max_consecutive_failures must be an integer from 1 to 100');
  return raw as number;
}
