import type { Principal } from '../../domain/principal';
import type { SessionRecord } from '../../domain/session';
import type { SessionRepository } from '../../ports/session-repository';
import type { Database } from './database';
import { UUID_PATTERN } from './keyset-cursor';
import { lastSequenceSql } from './event-codec';
import { toSessionRecord } from './pg-session-queries';

export class PgSessionRepository implements SessionRepository {
  constructor(private readonly db: Database) {}

  /** A principal reads only its own sessions in its own tenant; anything else reads as "not found". */
  async get(sessionId: string, principal: Principal): Promise<SessionRecord | null> {
    if (!UUID_PATTERN.test(sessionId)) return null;
    const r = await this.db.query(
      `SELECT s.*, ${lastSequenceSql('s.id')} AS last_sequence FROM sessions s
        WHERE s.id = $1 AND s.tenant_id = $2 AND s.principal_id = $3`,
      [sessionId, principal.tenantId, principal.principalId],
    );
    return r.rows[0] ? toSessionRecord(r.rows[0]) : null;
  }

  async idempotentSubmission(principal: Principal, key: string) {
    const r = await this.db.query<{ run_id: string; session_id: string; request_hash: string }>(
      `SELECT run_id, session_id, request_hash FROM idempotency_keys
        WHERE tenant_id = $1 AND principal_id = $2 AND scope = 'submit_message' AND key = $3`,
      [principal.tenantId, principal.principalId, key],
    );
    const row = r.rows[0];
    return row ? { runId: row.run_id, sessionId: row.session_id, requestHash: row.request_hash } : null;
  }
}
