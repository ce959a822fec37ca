import type { FormationDue, FormationLedger, FormationOutcome } from '../../../ports/memory-formation';
import type { Database } from '../database';

/**
 * The formation ledger on PostgreSQL (ADR 0043): `memory_formations`, one row per run. A claim is an
 * insert, or the takeover of a claim older than the lease (its worker died); a finished row is never
 * claimed again. Child runs are not formed (their "user" message is the parent's delegation).
 */
export class PgFormationLedger implements FormationLedger {
  constructor(private readonly db: Database) {}

  async due(sinceIso: string, staleBeforeIso: string, limit: number): Promise<FormationDue[]> {
    const rows = (
      await this.db.query<Record<string, string>>(
        `SELECT r.id, r.tenant_id, r.principal_id, r.session_id, r.agent_id, r.model_policy
           FROM runs r LEFT JOIN memory_formations f ON f.tenant_id = r.tenant_id AND f.run_id = r.id
          WHERE r.status = 'completed' AND r.completed_at >= $1 AND r.parent_run_id IS NULL
            AND (f.run_id IS NULL OR (f.status = 'claimed' AND f.claimed_at < $2))
          ORDER BY r.completed_at LIMIT $3`,
        [sinceIso, staleBeforeIso, limit],
      )
    ).rows;
    return rows.map((r) => ({
      runId: r.id,
      tenantId: r.tenant_id,
      principalId: r.principal_id,
      sessionId: r.session_id,
      agentId: r.agent_id,
      modelPolicy: r.model_policy,
    }));
  }

  async claim(run: FormationDue, nowIso: string, staleBeforeIso: string): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO memory_formations (tenant_id, run_id, status, claimed_at) VALUES ($1, $2, 'claimed', $3)
       ON CONFLICT (tenant_id, run_id) DO UPDATE SET claimed_at = EXCLUDED.claimed_at,
              attempts = memory_formations.attempts + 1
        WHERE memory_formations.status = 'claimed' AND memory_formations.claimed_at < $4
       RETURNING run_id`,
      [run.tenantId, run.runId, nowIso, staleBeforeIso],
    );
    return r.rows.length === 1;
  }

  async finish(run: FormationDue, nowIso: string, outcome: FormationOutcome): Promise<void> {
    await this.db.query(
      `UPDATE memory_formations SET status = 'formed', formed_at = $3, outcome = $4
        WHERE tenant_id = $1 AND run_id = $2`,
      [run.tenantId, run.runId, nowIso, JSON.stringify(outcome)],
    );
  }
}
