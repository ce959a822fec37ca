import type { StoredEvent } from '../events/payloads';
import { addResponseUsage, addUsage, ZERO_USAGE, type RunUsage } from '../run/usage';
import type { Projection, Row } from './projection';

/**
 * runs: the run read model and queue. `lease_expires_at` is operational (refreshed by heartbeats,
 * carried by no event) and therefore not a projection column. v5 (issue 33): `queued_behind`, the
 * run it was queued behind (such a run is claimable only once it is its session's active run). v6:
 * `interrupt` ({mode, byRunId} of `run.interrupt_requested`, which also sets `cancel_requested_at`: the
 * loop stops at its next safe point as for a cancel) and the terminal status `interrupted`.
 */
export const runProjection: Projection = {
  name: 'runs',
  table: 'runs',
  // v4: `scopes`, the run's recorded scope set (run.queued v2, ADR 0032).
  // v5: `parent_run_id` and `delegation` of a child run (run.delegated, ADR 0037), `waiting_for_children`.
  // v6: `queued_behind` and `interrupt` (issue 33, ADR 0038).
  // v7: `schedule_id` (run.queued v4, issue 31).
  // v8: `first_sequence` and `last_sequence`, where the run's events start (its user message) and end
  // in its session's stream: a run's events are read as that range (ADR 0054).
  version: 8,
  keyColumn: 'id',
  columns: [
    'id',
    'session_id',
    'tenant_id',
    'principal_id',
    'parent_run_id',
    'delegation',
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
    'scopes',
    'queued_behind',
    'schedule_id',
    'first_sequence',
    'last_sequence',
    'interrupt',
    'created_at',
    'updated_at',
    'started_at',
    'completed_at',
  ],
  // Every event naming a run: each moves the run's `last_sequence` (v8), so its events' range stays exact.
  keyOf: (e) => e.runId,
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'run.queued') return queuedRow(e);
    if (!row) return undefined;
    const next = lifecycleChange(row, e) ?? countersChange(row, e) ?? row;
    return withLastSequence(next, row, e);
  },
};

function queuedRow(e: StoredEvent<'run.queued'>): Row {
  return {
    id: e.runId,
    session_id: e.sessionId,
    tenant_id: e.tenantId,
    principal_id: e.data.principalId,
    parent_run_id: null,
    delegation: null,
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
    scopes: e.data.scopes,
    queued_behind: e.data.queuedBehind ?? null,
    schedule_id: e.data.scheduleId ?? null,
    first_sequence: firstSequence(e),
    last_sequence: e.sequence,
    interrupt: null,
    created_at: e.createdAt,
    updated_at: e.createdAt,
    started_at: null,
    completed_at: null,
  };
}

/**
 * The run's events end at `last_sequence`: the latest event of the run in its own session. (Events
 * that name a run from another stream, such as a memory formed from it, are not the run's events.)
 * Other run-scoped events leave the row as it was.
 */
function withLastSequence(next: Row, row: Row, e: StoredEvent): Row {
  if (e.sessionId !== row.session_id || e.sequence <= Number(row.last_sequence)) return next;
  return { ...next, last_sequence: e.sequence };
}

/**
 * Where the run's events start in its session's stream: its user message, which the session decider
 * appends right before `run.queued` in the same batch (every run is queued by a submitted message);
 * `run.queued` itself for a run without one. Reads may start earlier than a run's first event, never
 * later: they filter by `run_id`.
 */
function firstSequence(e: StoredEvent<'run.queued'>): number {
  return e.data.userMessageId !== null ? e.sequence - 1 : e.sequence;
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
    case 'run.interrupt_requested':
      next.cancel_requested_at = row.cancel_requested_at ?? e.createdAt;
      next.interrupt = { mode: e.data.mode, byRunId: e.data.byRunId };
      break;
    case 'run.waiting_for_approval':
      next.status = 'waiting_for_approval';
      next.lease_owner = null;
      break;
    case 'run.waiting_for_user':
      next.status = 'waiting_for_user';
      next.lease_owner = null;
      break;
    case 'run.waiting_for_children':
      next.status = 'waiting_for_children';
      next.lease_owner = null;
      break;
    case 'run.resumed':
      next.status = 'queued';
      next.lease_owner = null;
      // A human resolution is a fresh start, not a crash: the crash allowance (claims without
      // finishing) counts again from zero, so a run with many approvals is not failed for it.
      next.attempts = 0;
      // Time spent waiting for a human is not the run's to spend: the next claim starts a fresh
      // wall-clock budget of limits.deadlineSeconds (see docs/adr/0006). Time its children spent
      // is (plan §27.6: the parent's deadline bounds the children), so a join keeps it.
      if (row.status !== 'waiting_for_children') next.deadline_at = null;
      break;
    case 'run.delegated':
      next.parent_run_id = e.data.parentRunId;
      next.deadline_at = e.data.deadlineAt;
      next.delegation = {
        parentSessionId: e.data.parentSessionId,
        invocationId: e.data.invocationId,
        briefIndex: e.data.briefIndex,
        tools: e.data.tools,
        scopes: e.data.scopes,
        parentTrace: e.data.parentTrace,
      };
      break;
    default:
      return endingChange(next, e);
  }
  return next;
}

/** The row after the event that ends a run (`next` already carries `updated_at`); null for any other event. */
function endingChange(next: Row, e: StoredEvent): Row | null {
  switch (e.type) {
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
    case 'run.interrupted':
      next.status = 'interrupted';
      next.lease_owner = null;
      next.completed_at = e.createdAt;
      next.interrupt = { mode: e.data.mode, byRunId: e.data.byRunId };
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
    case 'run.children_joined':
      // Plan §6.5: a parent's usage aggregates its children's, so its budgets bound the whole tree.
      next.usage = e.data.children.reduce((u, c) => addUsage(u, c.usage), usage);
      break;
    default:
      return null;
  }
  return next;
}
