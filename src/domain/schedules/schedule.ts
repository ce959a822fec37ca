import type { RunLimits } from '../run/limits';
import type { Cadence } from './cadence';

/**
 * One immutable revision of a schedule (ADR 0034): what to submit, when, as whom and with what.
 * It names the principal's requested scopes, never a credential; the principal's current
 * authority is resolved again at every firing.
 */
export interface ScheduleDefinition {
  readonly title: string;
  /** The message each occurrence submits as the first user message of its own session. */
  readonly message: string;
  readonly cadence: Cadence;
  /** The pinned agent and version each occurrence's session is bound to. */
  readonly agentId: string;
  readonly agentVersion: number;
  /** The scopes the schedule's runs may use; a subset of the creator's scopes at creation. */
  readonly scopes: readonly string[];
  /** Finite run limits (deadline included) of every occurrence's run. */
  readonly limits: RunLimits;
  /**
   * After downtime past the misfire grace: `run_once` fires one coalesced catch-up occurrence;
   * `skip` records it as `missed` without a run. Never a backlog replay either way.
   */
  readonly misfire: MisfirePolicy;
  /** Consecutive failed occurrences after which the schedule pauses itself. */
  readonly maxConsecutiveFailures: number;
}

export type MisfirePolicy = 'run_once' | 'skip';
export const MISFIRE_POLICIES: readonly MisfirePolicy[] = ['run_once', 'skip'];

export type ScheduleStatus = 'active' | 'paused' | 'cancelled' | 'completed';
export const SCHEDULE_STATUSES: readonly ScheduleStatus[] = ['active', 'paused', 'cancelled', 'completed'];

/** What the occurrence ledger records per nominal instant. */
export type OccurrenceStatus = 'fired' | 'skipped_overlap' | 'missed' | 'failed';
export const OCCURRENCE_STATUSES: readonly OccurrenceStatus[] = ['fired', 'skipped_overlap', 'missed', 'failed'];

/** Why an occurrence failed closed, before any session or run existed. */
export type OccurrenceFailureReason =
  | 'principal_missing'
  | 'scope_revoked'
  | 'agent_version_missing'
  | 'tenant_concurrency'
  | 'tenant_rate'
  | 'tenant_daily_cost'
  | 'tenant_monthly_cost';
export const OCCURRENCE_FAILURE_REASONS: readonly OccurrenceFailureReason[] = [
  'principal_missing',
  'scope_revoked',
  'agent_version_missing',
  'tenant_concurrency',
  'tenant_rate',
  'tenant_daily_cost',
  'tenant_monthly_cost',
];

/**
 * Scheduled runs queue below interactive ones: the claim orders by priority ascending and a
 * submitted message is 100 (plan §5: interactive work is never starved by background work).
 */
export const SCHEDULED_RUN_PRIORITY = 200;

/** The principal of a schedule's own stream session: a system one, so no user's session list shows it. */
export const SCHEDULE_STREAM_PRINCIPAL = 'system:schedules';

/** Default consecutive failures before a schedule pauses itself (issue 29 item 4). */
export const DEFAULT_MAX_CONSECUTIVE_FAILURES = 3;

/** A timestamp as a row or `to_jsonb` holds it (Date or string), as an ISO-8601 UTC string (or null). */
export function isoInstantOf(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  return new Date(v instanceof Date ? v.getTime() : (v as string)).toISOString();
}
