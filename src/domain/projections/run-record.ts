import type { RunDelegation, RunRecord } from '../run/run';
import type { RunLimits } from '../run/limits';
import type { RunUsage } from '../run/usage';
import type { RunFailure } from '../run/failure';
import type { RunStatus } from '../run/status';

const iso = (v: unknown): string | null => (v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : null);

/** Maps a `runs` projection row (its columns as the run projection folds them, or as a store reads them back) to the domain record. */
export function toRunRecord(r: Record<string, unknown>): RunRecord {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    tenantId: String(r.tenant_id),
    principalId: String(r.principal_id),
    parentRunId: (r.parent_run_id as string | null | undefined) ?? null,
    delegation: (r.delegation as RunDelegation | null | undefined) ?? null,
    agentId: String(r.agent_id),
    agentVersion: Number(r.agent_version),
    modelPolicy: String(r.model_policy),
    status: r.status as RunStatus,
    priority: Number(r.priority),
    attempts: Number(r.attempts),
    stepCount: Number(r.step_count),
    modelCallCount: Number(r.model_call_count),
    toolCallCount: Number(r.tool_call_count),
    limits: r.limits as RunLimits,
    usage: r.usage as RunUsage,
    userMessageId: (r.user_message_id as string | null) ?? null,
    finalText: (r.final_text as string | null) ?? null,
    leaseOwner: (r.lease_owner as string | null) ?? null,
    leaseEpoch: Number(r.lease_epoch),
    leaseExpiresAt: iso(r.lease_expires_at),
    cancelRequestedAt: iso(r.cancel_requested_at),
    deadlineAt: iso(r.deadline_at),
    failure: (r.failure as RunFailure | null) ?? null,
    idempotencyKey: (r.idempotency_key as string | null) ?? null,
    // Fails closed: a row without a readable set grants no scope.
    scopes: Array.isArray(r.scopes) ? r.scopes.filter((s): s is string => typeof s === 'string') : [],
    queuedBehind: (r.queued_behind as string | null | undefined) ?? null,
    interrupt: (r.interrupt as RunRecord['interrupt'] | undefined) ?? null,
    scheduleId: (r.schedule_id as string | null | undefined) ?? null,
    queuePosition: r.queue_position === null || r.queue_position === undefined ? null : Number(r.queue_position),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    startedAt: iso(r.started_at),
    completedAt: iso(r.completed_at),
  };
}
