import type { RunFailure } from '../../../domain/run/failure';
import type { RunStatus } from '../../../domain/run/status';
import type { RunUsage } from '../../../domain/run/usage';
import type { ChildRun, ChildRunStore } from '../../../ports/run-store';
import type { Database } from '../database';
import { UUID_PATTERN } from '../keyset-cursor';

const ACTIVE = `status NOT IN ('completed', 'failed', 'cancelled')`;

interface ChildRow {
  id: string;
  session_id: string;
  tenant_id: string;
  status: string;
  final_text: string | null;
  failure: RunFailure | null;
  usage: RunUsage;
  delegation: { invocationId: string; briefIndex: number };
  created_at: Date;
  artifact_ids: string[];
}

/** The child runs of `delegate.run` on PostgreSQL (runs_parent_idx, runs_waiting_for_children_idx). */
export class PgChildRuns implements ChildRunStore {
  constructor(private readonly db: Database) {}

  async childrenOf(parentRunId: string, tenantId: string | null): Promise<ChildRun[]> {
    if (!UUID_PATTERN.test(parentRunId)) return [];
    const res = await this.db.query<ChildRow>(
      `SELECT r.id, r.session_id, r.tenant_id, r.status, r.final_text, r.failure, r.usage, r.delegation, r.created_at,
              ARRAY(SELECT a.id::text FROM artifacts a WHERE a.tenant_id = r.tenant_id AND a.run_id = r.id
                     ORDER BY a.created_at) AS artifact_ids
         FROM runs r
        WHERE r.parent_run_id = $1 AND ($2::text IS NULL OR r.tenant_id = $2)
        ORDER BY r.created_at, (r.delegation->>'briefIndex')::int`,
      [parentRunId, tenantId],
    );
    return res.rows.map((r) => ({
      runId: r.id,
      sessionId: r.session_id,
      tenantId: r.tenant_id,
      briefIndex: Number(r.delegation.briefIndex),
      invocationId: r.delegation.invocationId,
      status: r.status as RunStatus,
      finalText: r.final_text,
      failure: r.failure,
      usage: r.usage,
      artifactIds: r.artifact_ids,
      createdAt: r.created_at.toISOString(),
    }));
  }

  async joinableParents(limit: number): Promise<string[]> {
    const res = await this.db.query<{ id: string }>(
      `SELECT p.id FROM runs p
        WHERE p.status = 'waiting_for_children'
          AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = p.id AND c.${ACTIVE})
        LIMIT $1`,
      [limit],
    );
    return res.rows.map((r) => r.id);
  }

  async orphanedChildren(limit: number): Promise<{ runId: string; tenantId: string }[]> {
    const res = await this.db.query<{ id: string; tenant_id: string }>(
      `SELECT c.id, c.tenant_id FROM runs c JOIN runs p ON p.id = c.parent_run_id
        WHERE c.parent_run_id IS NOT NULL AND c.${ACTIVE} AND c.cancel_requested_at IS NULL
          AND p.status IN ('completed', 'failed', 'cancelled')
        LIMIT $1`,
      [limit],
    );
    return res.rows.map((r) => ({ runId: r.id, tenantId: r.tenant_id }));
  }

  async activeRunCount(tenantId: string): Promise<number> {
    const res = await this.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM runs WHERE tenant_id = $1 AND ${ACTIVE}`,
      [tenantId],
    );
    return Number(res.rows[0].n);
  }
}
