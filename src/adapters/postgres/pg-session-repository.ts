import type { Principal } from '../../domain/principal';
import type { SessionRecord, SessionStatus } from '../../domain/session';
import type { SessionRepository } from '../../ports/session-repository';
import type { Database } from './database';

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : String(v));

export class PgSessionRepository implements SessionRepository {
  constructor(private readonly db: Database) {}

  async get(sessionId: string, principal: Principal): Promise<SessionRecord | null> {
    if (!/^[0-9a-f-]{36}$/i.test(sessionId)) return null;
    const r = (
      await this.db.query('SELECT * FROM sessions WHERE id = $1 AND tenant_id = $2', [sessionId, principal.tenantId])
    ).rows[0];
    if (!r) return null;
    return {
      id: String(r.id),
      tenantId: String(r.tenant_id),
      principalId: String(r.principal_id),
      agentId: String(r.agent_id),
      agentVersion: Number(r.agent_version),
      status: r.status as SessionStatus,
      title: (r.title as string | null) ?? null,
      lastSequence: Number(r.next_event_sequence),
      activeRunId: (r.active_run_id as string | null) ?? null,
      lastRunId: (r.last_run_id as string | null) ?? null,
      createdAt: iso(r.created_at),
      updatedAt: iso(r.updated_at),
    };
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
