import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';

/**
 * tool_invocations: one row per proposed tool call, with the statuses of plan §8.4. v2: an
 * `approval.requested` for the invocation makes it WAITING_FOR_APPROVAL, and the effect watermark
 * (`tool.call.effect_started`) sets `effect_sent_at`, so a rebuild carries both.
 */
export const toolInvocationProjection: Projection = {
  name: 'tool_invocations',
  table: 'tool_invocations',
  version: 2,
  keyColumn: 'id',
  columns: [
    'id',
    'run_id',
    'session_id',
    'tenant_id',
    'step_number',
    'provider_call_id',
    'tool_name',
    'tool_version',
    'arguments',
    'normalized_arguments_hash',
    'idempotency_key',
    'status',
    'policy_decision',
    'result',
    'error',
    'effect_sent_at',
    'started_at',
    'completed_at',
    'created_at',
    'updated_at',
  ],
  keyOf: (e) => {
    if (e.type.startsWith('tool.call.')) return (e.data as { invocationId: string }).invocationId;
    if (e.type === 'approval.requested') return e.data.invocationId;
    return null;
  },
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'tool.call.proposed') {
      return {
        id: e.data.invocationId,
        run_id: e.runId,
        session_id: e.sessionId,
        tenant_id: e.tenantId,
        step_number: e.data.step,
        provider_call_id: e.data.callId,
        tool_name: e.data.toolName,
        tool_version: e.data.toolVersion,
        arguments: e.data.arguments,
        normalized_arguments_hash: e.data.argumentsHash,
        idempotency_key: e.data.idempotencyKey,
        status: 'proposed',
        policy_decision: null,
        result: null,
        error: null,
        effect_sent_at: null,
        started_at: null,
        completed_at: null,
        created_at: e.createdAt,
        updated_at: e.createdAt,
      };
    }
    if (!row) return undefined;
    const next: Row = { ...row, updated_at: e.createdAt };
    switch (e.type) {
      case 'tool.call.authorized':
        next.status = 'authorized';
        next.policy_decision = {
          decision: e.data.decision,
          reasonCode: e.data.reasonCode,
          policyVersion: e.data.policyVersion,
        };
        break;
      case 'tool.call.denied':
        next.status = 'denied';
        next.policy_decision = { decision: 'deny', reasonCode: e.data.reasonCode, policyVersion: e.data.policyVersion };
        next.error = { code: e.data.reasonCode, message: e.data.explanation };
        next.completed_at = e.createdAt;
        break;
      case 'approval.requested':
        // A review of an UNCERTAIN invocation leaves it uncertain until the human decides.
        if (e.data.actionKind === 'tool_call') next.status = 'waiting_for_approval';
        break;
      case 'tool.call.started':
        next.status = 'running';
        next.started_at = e.createdAt;
        next.effect_sent_at = null;
        break;
      case 'tool.call.effect_started':
        next.effect_sent_at = e.createdAt;
        break;
      case 'tool.call.completed':
        next.status = 'succeeded';
        next.result = e.data.result;
        next.error = null;
        next.completed_at = e.createdAt;
        break;
      case 'tool.call.failed':
        next.status = 'failed';
        next.error = { code: e.data.errorCode, message: e.data.message, retryable: e.data.retryable };
        next.completed_at = e.createdAt;
        break;
      case 'tool.call.uncertain':
        next.status = 'uncertain';
        next.error = { code: 'uncertain', message: e.data.reason };
        break;
      case 'tool.call.suspended':
        // Stopped before any effect of its own; it starts again (and marks its watermark again).
        next.status = 'authorized';
        next.effect_sent_at = null;
        break;
      default:
        return row;
    }
    return next;
  },
};
