import type { Principal } from '../../../domain/principal';
import type { RunRecord } from '../../../domain/run/run';
import type { RunRepository } from '../../../ports/run-store';
import type { Database } from '../database';
import { UUID_PATTERN } from '../keyset-cursor';
import { toRunRecord } from '../../../domain/projections/run-record';

/**
 * A queued run's place in its session (issue 33): 0 when it is the session's active run (next to be
 * claimed), n when n runs are ahead of it (`sessions.queued_run_ids`); null for a run not queued.
 */
const QUEUE_POSITION_SQL = `CASE WHEN r.status = 'queued' THEN (
    SELECT CASE WHEN s.active_run_id = r.id THEN 0
                ELSE (SELECT q.ord FROM jsonb_array_elements_text(s.queued_run_ids) WITH ORDINALITY q(id, ord)
                       WHERE q.id = r.id::text) END
      FROM sessions s WHERE s.id = r.session_id) END`;

export class PgRunRepository implements RunRepository {
  constructor(private readonly db: Database) {}

  /**
   * A principal reads only its own runs in its own tenant (anything else reads as "not found");
   * `null` is the worker, which reads any run.
   */
  async get(runId: string, principal: Principal | null): Promise<RunRecord | null> {
    if (!UUID_PATTERN.test(runId)) return null;
    const res = principal
      ? await this.db.query(
          `SELECT r.*, ${QUEUE_POSITION_SQL} AS queue_position FROM runs r
            WHERE r.id = $1 AND r.tenant_id = $2 AND r.principal_id = $3`,
          [runId, principal.tenantId, principal.principalId],
        )
      : await this.db.query('SELECT * FROM runs WHERE id = $1', [runId]);
    return res.rows[0] ? toRunRecord(res.rows[0]) : null;
  }

  async priorInvocations(
    runId: string,
    toolName: string,
    argumentsHash: string,
  ): Promise<readonly { status: string; result: unknown }[]> {
    const res = await this.db.query<{ status: string; result: unknown }>(
      'SELECT status, result FROM tool_invocations WHERE run_id = $1 AND tool_name = $2 AND normalized_arguments_hash = $3 ORDER BY created_at',
      [runId, toolName, argumentsHash],
    );
    return res.rows;
  }

  async invocationByKey(idempotencyKey: string) {
    const res = await this.db.query<{
      id: string;
      status: string;
      result: Record<string, unknown> | null;
      error: { code: string; message: string } | null;
    }>('SELECT id, status, result, error FROM tool_invocations WHERE idempotency_key = $1', [idempotencyKey]);
    return res.rows[0] ?? null;
  }
}
