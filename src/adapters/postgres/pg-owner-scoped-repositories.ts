import type { Principal } from '../../domain/principal';
import type { RunRecord } from '../../domain/run/run';
import type { SessionRecord } from '../../domain/session';
import type { Database } from './database';
import { UUID_PATTERN } from './keyset-cursor';
import { PgSessionRepository } from './pg-session-repository';
import { toSessionRecord } from './pg-session-queries';
import { PgRunRepository } from './runs/pg-run-repository';
import { toRunRecord } from './runs/run-row';

/**
 * The repositories the application handlers use: a principal sees only its own tenant's and its own
 * sessions and runs (anything else reads as "not found"). Tenant and principal are WHERE arguments,
 * never a filter applied after the read. `null` (the worker) still reads any run.
 */
export class PgOwnedSessionRepository extends PgSessionRepository {
  constructor(private readonly database: Database) {
    super(database);
  }

  override async get(sessionId: string, principal: Principal): Promise<SessionRecord | null> {
    if (!UUID_PATTERN.test(sessionId)) return null;
    const r = await this.database.query(
      'SELECT * FROM sessions WHERE id = $1 AND tenant_id = $2 AND principal_id = $3',
      [sessionId, principal.tenantId, principal.principalId],
    );
    return r.rows[0] ? toSessionRecord(r.rows[0]) : null;
  }
}

export class PgOwnedRunRepository extends PgRunRepository {
  constructor(private readonly database: Database) {
    super(database);
  }

  override async get(runId: string, principal: Principal | null): Promise<RunRecord | null> {
    if (principal === null) return super.get(runId, null);
    if (!UUID_PATTERN.test(runId)) return null;
    const r = await this.database.query('SELECT * FROM runs WHERE id = $1 AND tenant_id = $2 AND principal_id = $3', [
      runId,
      principal.tenantId,
      principal.principalId,
    ]);
    return r.rows[0] ? toRunRecord(r.rows[0]) : null;
  }
}
