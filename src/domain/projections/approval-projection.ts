import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';

/** approvals: pending human decisions and their resolutions. */
export const approvalProjection: Projection = {
  name: 'approvals',
  table: 'approvals',
  // v4: `resolution.edit` (approve with edits, issue 33).
  version: 4,
  keyColumn: 'id',
  columns: [
    'id',
    'run_id',
    'session_id',
    'tenant_id',
    'principal_id',
    'tool_invocation_id',
    'status',
    'action_kind',
    'risk',
    'request',
    'resolution',
    'policy_version',
    'expires_at',
    'created_at',
    'resolved_at',
    'resolved_by',
    'expiry_warned_at',
  ],
  keyOf: (e) =>
    e.type === 'approval.requested' || e.type === 'approval.resolved' || e.type === 'approval.expiring'
      ? e.data.approvalId
      : null,
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'approval.requested') {
      return {
        id: e.data.approvalId,
        run_id: e.runId,
        session_id: e.sessionId,
        tenant_id: e.tenantId,
        principal_id: e.data.principalId,
        tool_invocation_id: e.data.invocationId,
        status: 'pending',
        action_kind: e.data.actionKind,
        risk: e.data.risk,
        request: {
          toolName: e.data.toolName,
          arguments: e.data.arguments,
          actionSummary: e.data.actionSummary,
          policyReason: e.data.policyReason,
        },
        resolution: null,
        policy_version: e.data.policyVersion,
        expires_at: e.data.expiresAt,
        created_at: e.createdAt,
        resolved_at: null,
        resolved_by: null,
        expiry_warned_at: null,
      };
    }
    if (row && e.type === 'approval.expiring') return { ...row, expiry_warned_at: e.createdAt };
    if (!row || e.type !== 'approval.resolved') return row;
    return {
      ...row,
      status: e.data.decision,
      resolution: { decision: e.data.decision, reason: e.data.reason, edit: e.data.edit ?? null },
      resolved_at: e.createdAt,
      resolved_by: e.data.resolvedBy,
    };
  },
};
