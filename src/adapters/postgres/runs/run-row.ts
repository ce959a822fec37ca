import type { RunRecord } from '../../../domain/run/run';
import type { RunLimits } from '../../../domain/run/limits';
import type { RunUsage } from '../../../domain/run/usage';
import type { RunFailure } from '../../../domain/run/failure';
import type { RunStatus } from '../../../domain/run/status';

const iso = (v: unknown): string | null => (v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : null);

/** Maps a `runs` row to the domain record; the row type never leaves the adapter. */
export function toRunRecord(r: Record<string, unknown>): RunRecord {
  return {
    id: String(r.id),
    sessionId: String(r.session_id),
    tenantId: String(r.tenant_id),
    principalId: String(r.principal_id),
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
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    startedAt: iso(r.started_at),
    completedAt: iso(r.completed_at),
  };
}
