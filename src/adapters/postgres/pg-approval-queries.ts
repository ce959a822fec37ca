import type { ApprovalReach, ApprovalReadModel, ApprovalRecord, ApprovalStatus, Page } from '../../ports/read-models';
import type { Database } from './database';
import { decodeCursor, encodeCursor, isoOf, isoOrNull, UUID_PATTERN } from './keyset-cursor';

function toApproval(r: Record<string, unknown>): ApprovalRecord {
  return {
    id: String(r.id),
    runId: String(r.run_id),
    sessionId: String(r.session_id),
    principalId: String(r.principal_id),
    toolInvocationId: (r.tool_invocation_id as string | null) ?? null,
    status: r.status as ApprovalStatus,
    actionKind: String(r.action_kind),
    risk: (r.risk as string | null) ?? null,
    request: (r.request as Record<string, unknown>) ?? {},
    resolution: (r.resolution as Record<string, unknown> | null) ?? null,
    policyVersion: (r.policy_version as string | null) ?? null,
    expiresAt: isoOrNull(r.expires_at),
    createdAt: isoOf(r.created_at),
    resolvedAt: isoOrNull(r.resolved_at),
    resolvedBy: (r.resolved_by as string | null) ?? null,
  };
}

/** Reads the `approvals` projection, newest first; tenant (and, unless an approver reads, principal) are query arguments. */
export class PgApprovalQueries implements ApprovalReadModel {
  constructor(private readonly db: Database) {}

  async list(
    reach: ApprovalReach,
    filter: 'pending' | 'resolved' | null,
    limit: number,
    cursor: string | null,
  ): Promise<Page<ApprovalRecord>> {
    // $2 is the principal, or null for the whole tenant (an approver).
    const values: unknown[] = [reach.tenantId, reach.principalId, limit + 1];
    const where = ['tenant_id = $1', '($2::text IS NULL OR principal_id = $2)'];
    if (filter === 'pending') where.push(`status = 'pending'`);
    if (filter === 'resolved') where.push(`status <> 'pending'`);
    if (cursor !== null) {
      const [createdAt, id] = decodeCursor(cursor, ['string', 'string'] as const);
      if (!UUID_PATTERN.test(id) || Number.isNaN(Date.parse(createdAt))) return { items: [], nextCursor: null };
      values.push(createdAt, id);
      where.push('(created_at, id) < ($4::timestamptz, $5::uuid)');
    }
    const rows = (
      await this.db.query(
        `SELECT * FROM approvals WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $3`,
        values,
      )
    ).rows;
    const items = rows.slice(0, limit).map(toApproval);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null };
  }

  async get(approvalId: string, reach: ApprovalReach): Promise<ApprovalRecord | null> {
    if (!UUID_PATTERN.test(approvalId)) return null;
    const r = await this.db.query(
      'SELECT * FROM approvals WHERE id = $1 AND tenant_id = $2 AND ($3::text IS NULL OR principal_id = $3)',
      [approvalId, reach.tenantId, reach.principalId],
    );
    return r.rows[0] ? toApproval(r.rows[0]) : null;
  }
}
