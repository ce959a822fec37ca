import type { StoredEvent } from '../events/payloads';
import { addResponseUsage, ZERO_USAGE, type RunUsage } from '../run/usage';
import type { Projection, Row } from './projection';

/**
 * runs: the run read model and queue. `lease_expires_at` is operational (refreshed by heartbeats,
 * carried by no event) and therefore not a projection column.
 */
export const runProjection: Projection = {
  name: 'runs',
  table: 'runs',
  version: 3,
  keyColumn: 'id',
  columns: [
    'id',
    'session_id',
    'tenant_id',
    'principal_id',
    'parent_run_id',
    'agent_id',
    'agent_version',
    'model_policy',
    'status',
    'priority',
    'attempts',
    'scheduled_for',
    'step_count',
    'model_call_count',
    'tool_call_count',
    'limits',
    'usage',
    'user_message_id',
    'final_text',
    'lease_owner',
    'lease_epoch',
    'cancel_requested_at',
    'deadline_at',
    'failure',
    'idempotency_key',
    'created_at',
    'updated_at',
    'started_at',
    'completed_at',
  ],
  keyOf: (e) =>
    e.runId &&
    (e.type.startsWith('run.') ||
      e.type.startsWith('model.') ||
      e.type.startsWith('tool.call.') ||
      e.type === 'assistant.message.completed')
      ? e.runId
      : null,
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'run.queued') return queuedRow(e);
    if (!row) return undefined;
    // Other run-scoped events do not change the run row.
    return lifecycleChange(row, e) ?? countersChange(row, e) ?? row;
  },
};

function queuedRow(e: StoredEvent<'run.queued'>): Row {
  return {
    id: e.runId,
    session_id: e.sessionId,
    tenant_id: e.tenantId,
    principal_id: e.data.principalId,
    parent_run_id: null,
    agent_id: e.data.agentId,
    agent_version: e.data.agentVersion,
    model_policy: e.data.modelPolicy,
    status: 'queued',
    priority: e.data.priority,
    attempts: 0,
    scheduled_for: null,
    step_count: 0,
    model_call_count: 0,
    tool_call_count: 0,
    limits: e.data.limits,
    usage: ZERO_USAGE,
    user_message_id: e.data.userMessageId,
    final_text: null,
    lease_owner: null,
    lease_epoch: 0,
    cancel_requested_at: null,
    deadline_at: null,
    failure: null,
    idempotency_key: e.data.idempotencyKey,
    created_at: e.createdAt,
    updated_at: e.createdAt,
    started_at: null,
    completed_at: null,
  };
}

/** The row after a run lifecycle event (status, lease, attempts, deadlines); null for any other event. */
function lifecycleChange(row: Row, e: StoredEvent): Row | null {
  const next: Row = { ...row, updated_at: e.createdAt };
  switch (e.type) {
    case 'run.claimed':
      next.status = 'running';
      next.lease_owner = e.data.workerId;
      next.lease_epoch = e.data.leaseEpoch;
      next.attempts = e.data.attempt;
      break;
    case 'run.started':
      next.started_at = row.started_at ?? e.createdAt;
      next.deadline_at = row.deadline_at ?? e.data.deadlineAt;
      break;
    case 'run.released':
      next.status = 'queued';
      next.lease_owner = null;
      break;
    case 'run.checkpointed':
      next.step_count = Math.max(Number(row.step_count), e.data.step);
      break;
    case 'run.cancel_requested':
      next.cancel_requested_at = row.cancel_requested_at ?? e.createdAt;
      break;
    case 'run.waiting_for_approval':
      next.status = 'waiting_for_approval';
      next.lease_owner = null;
      break;
    case 'run.waiting_for_user':
      next.status = 'waiting_for_user';
      next.lease_owner = null;
      break;
    case 'run.resumed':
      next.status = 'queued';
      next.lease_owner = null;
      // A human resolution is a fresh start, not a crash: the crash allowance (claims without
      // finishing) counts again from zero, so a run with many approvals is not failed for it.
      next.attempts = 0;
      // Time spent waiting for a human is not the run's to spend: the next claim starts a fresh
      // wall-clock budget of limits.deadlineSeconds (see docs/adr/0006).
      next.deadline_at = null;
      break;
    case 'run.completed':
      next.status = 'completed';
      next.lease_owner = null;
      next.completed_at = e.createdAt;
      break;
    case 'run.failed':
      next.status = 'failed';
      next.lease_owner = null;
      next.completed_at = e.createdAt;
      next.failure = { reason: e.data.reason, message: e.data.message, errorCode: e.data.errorCode };
      break;
    case 'run.cancelled':
      next.status = 'cancelled';
      next.lease_owner = null;
      next.completed_at = e.createdAt;
      break;
    default:
      return null;
  }
  return next;
}

/** The row after an event that moves its counters, usage or final text; null for any other event. */
function countersChange(row: Row, e: StoredEvent): Row | null {
  const next: Row = { ...row, updated_at: e.createdAt };
  const usage = row.usage as RunUsage;
  switch (e.type) {
    case 'model.request.started':
      next.model_call_count = Number(row.model_call_count) + 1;
      next.step_count = Math.max(Number(row.step_count), e.data.step);
      next.usage = { ...usage, modelCalls: usage.modelCalls + 1 };
      break;
    case 'model.response.completed':
      next.usage = addResponseUsage(usage, e.data);
      break;
    case 'tool.call.proposed':
      next.tool_call_count = Number(row.tool_call_count) + 1;
      next.usage = { ...usage, toolCalls: usage.toolCalls + 1 };
      break;
    case 'assistant.message.completed':
      next.final_text = e.data.text;
      break;
    default:
      return null;
  }
  return next;
}
