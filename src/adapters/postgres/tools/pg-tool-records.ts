import type { ApprovalActionKind } from '../../../domain/events/payloads';
import type {
  ApprovalRecord,
  ApprovalStatus,
  DemoWriteLog,
  DemoWriteRecord,
  InvocationRecord,
  ToolRecordStore,
} from '../../../ports/tool-records';
import type { Database } from '../database';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const iso = (v: unknown): string | null => (v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : null);

function toApproval(r: Record<string, unknown>): ApprovalRecord {
  const request = (r.request ?? {}) as {
    toolName?: string;
    arguments?: Record<string, unknown>;
    actionSummary?: string;
    policyReason?: string;
  };
  const resolution = r.resolution as
    { reason?: string | null; edit?: { editedArguments?: Record<string, unknown> } | null } | null | undefined;
  return {
    id: String(r.id),
    runId: String(r.run_id),
    sessionId: String(r.session_id),
    tenantId: String(r.tenant_id),
    principalId: String(r.principal_id),
    invocationId: (r.tool_invocation_id as string | null) ?? null,
    status: r.status as ApprovalStatus,
    actionKind: r.action_kind as ApprovalActionKind,
    toolName: request.toolName ?? '',
    arguments: request.arguments ?? {},
    actionSummary: request.actionSummary ?? '',
    policyReason: request.policyReason ?? '',
    risk: (r.risk as string | null) ?? null,
    policyVersion: (r.policy_version as string | null) ?? null,
    expiresAt: iso(r.expires_at),
    createdAt: iso(r.created_at)!,
    resolvedAt: iso(r.resolved_at),
    resolvedBy: (r.resolved_by as string | null) ?? null,
    reason: resolution?.reason ?? null,
    editedArguments: resolution?.edit?.editedArguments ?? null,
    expiryWarnedAt: iso(r.expiry_warned_at),
  };
}

function toInvocation(r: Record<string, unknown>): InvocationRecord {
  return {
    id: String(r.id),
    runId: String(r.run_id),
    sessionId: String(r.session_id),
    tenantId: String(r.tenant_id),
    step: Number(r.step_number),
    callId: String(r.provider_call_id),
    toolName: String(r.tool_name),
    arguments: (r.arguments as Record<string, unknown>) ?? {},
    idempotencyKey: String(r.idempotency_key),
    status: String(r.status),
    result: (r.result as Record<string, unknown> | null) ?? null,
    effectSentAt: iso(r.effect_sent_at),
  };
}

/** Reads of the tool_invocations and approvals read models; rows never leave this adapter. */
export class PgToolRecords implements ToolRecordStore, DemoWriteLog {
  constructor(private readonly db: Database) {}

  async approval(approvalId: string, tenantId: string | null): Promise<ApprovalRecord | null> {
    if (!UUID.test(approvalId)) return null;
    const res = await this.db.query('SELECT * FROM approvals WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)', [
      approvalId,
      tenantId,
    ]);
    return res.rows[0] ? toApproval(res.rows[0]) : null;
  }

  async approvalForInvocation(invocationId: string, kind: ApprovalActionKind): Promise<ApprovalRecord | null> {
    const res = await this.db.query(
      'SELECT * FROM approvals WHERE tool_invocation_id = $1 AND action_kind = $2 ORDER BY created_at DESC, id LIMIT 1',
      [invocationId, kind],
    );
    return res.rows[0] ? toApproval(res.rows[0]) : null;
  }

  async listApprovals(tenantId: string, status: ApprovalStatus | null, limit: number): Promise<ApprovalRecord[]> {
    const res = await this.db.query(
      'SELECT * FROM approvals WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2) ORDER BY created_at DESC LIMIT $3',
      [tenantId, status, limit],
    );
    return res.rows.map(toApproval);
  }

  async pendingApprovalsOfRun(runId: string): Promise<ApprovalRecord[]> {
    const res = await this.db.query(
      `SELECT * FROM approvals WHERE run_id = $1 AND status = 'pending' ORDER BY created_at`,
      [runId],
    );
    return res.rows.map(toApproval);
  }

  async openInvocationsOfRun(runId: string): Promise<{ invocationId: string; status: string }[]> {
    const res = await this.db.query<{ id: string; status: string }>(
      `SELECT id, status FROM tool_invocations
        WHERE run_id = $1 AND status IN ('proposed', 'authorized', 'waiting_for_approval', 'running', 'uncertain')
        ORDER BY created_at, id`,
      [runId],
    );
    return res.rows.map((r) => ({ invocationId: r.id, status: r.status }));
  }

  async expiredApprovals(nowIso: string, limit: number): Promise<ApprovalRecord[]> {
    const res = await this.db.query(
      `SELECT * FROM approvals WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1::timestamptz ORDER BY expires_at LIMIT $2`,
      [nowIso, limit],
    );
    return res.rows.map(toApproval);
  }

  async expiringApprovals(nowIso: string, leadSeconds: number, limit: number): Promise<ApprovalRecord[]> {
    const res = await this.db.query(
      `SELECT * FROM approvals WHERE status = 'pending' AND expiry_warned_at IS NULL
          AND expires_at > $1::timestamptz AND expires_at <= $1::timestamptz + make_interval(secs => $2)
        ORDER BY expires_at LIMIT $3`,
      [nowIso, leadSeconds, limit],
    );
    return res.rows.map(toApproval);
  }

  async invocation(invocationId: string, tenantId: string | null): Promise<InvocationRecord | null> {
    if (!UUID.test(invocationId)) return null;
    const res = await this.db.query(
      'SELECT * FROM tool_invocations WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)',
      [invocationId, tenantId],
    );
    return res.rows[0] ? toInvocation(res.rows[0]) : null;
  }

  async invocationByKey(idempotencyKey: string): Promise<InvocationRecord | null> {
    const res = await this.db.query('SELECT * FROM tool_invocations WHERE idempotency_key = $1', [idempotencyKey]);
    return res.rows[0] ? toInvocation(res.rows[0]) : null;
  }

  async invocationsOfCall(runId: string, toolName: string, argumentsHash: string): Promise<InvocationRecord[]> {
    const res = await this.db.query({
      name: 'agent_invocations_of_call',
      text: `SELECT * FROM tool_invocations WHERE run_id = $1 AND tool_name = $2 AND normalized_arguments_hash = $3
              ORDER BY created_at`,
      values: [runId, toolName, argumentsHash],
    });
    return res.rows.map(toInvocation);
  }

  async succeededInvocations(runId: string, toolName: string): Promise<InvocationRecord[]> {
    const res = await this.db.query(
      `SELECT * FROM tool_invocations WHERE run_id = $1 AND tool_name = $2 AND status = 'succeeded' ORDER BY created_at`,
      [runId, toolName],
    );
    return res.rows.map(toInvocation);
  }

  async record(w: DemoWriteRecord): Promise<{ id: number }> {
    const res = await this.db.query<{ id: string }>(
      `INSERT INTO demo_external_writes (tenant_id, session_id, run_id, invocation_id, idempotency_key, target, content)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
      [w.tenantId, w.sessionId, w.runId, w.invocationId, w.idempotencyKey, w.target, w.content],
    );
    return { id: Number(res.rows[0].id) };
  }

  async count(runId: string | null): Promise<number> {
    const res = await this.db.query<{ n: string }>(
      'SELECT count(*) AS n FROM demo_external_writes WHERE ($1::uuid IS NULL OR run_id = $1)',
      [runId],
    );
    return Number(res.rows[0].n);
  }
}
