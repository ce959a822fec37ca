import type { Principal } from '../../../domain/principal';
import type { RunRecord } from '../../../domain/run/run';
import type { RunRepository } from '../../../ports/run-store';
import type { Database } from '../database';
import { UUID_PATTERN } from '../keyset-cursor';
import { toRunRecord } from './run-row';

export class PgRunRepository implements RunRepository {
  constructor(private readonly db: Database) {}

  /**
   * A principal reads only its own runs in its own tenant (anything else reads as "not found");
   * `null` is the worker, which reads any run.
   */
  async get(runId: string, principal: Principal | null): Promise<RunRecord | null> {
    if (!UUID_PATTERN.test(runId)) return null;
    const res = principal
      ? await this.db.query('SELECT * FROM runs WHERE id = $1 AND tenant_id = $2 AND principal_id = $3', [
          runId,
          principal.tenantId,
          principal.principalId,
        ])
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
