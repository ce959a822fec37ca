import type { ContentPart } from '../../domain/conversation/items';
import type { Principal } from '../../domain/principal';
import type { SessionRecord, SessionStatus } from '../../domain/session';
import type { Page, SessionMessage, SessionReadModel } from '../../ports/read-models';
import type { Database } from './database';
import { decodeEvent, EVENT_COLUMNS, lastSequenceSql, type EventRow } from './event-codec';
import { decodeCursor, encodeCursor, isoOf, UUID_PATTERN } from './keyset-cursor';

/** A `sessions` row with its `last_sequence` (see `lastSequenceSql`) as the domain's record. */
export function toSessionRecord(r: Record<string, unknown>): SessionRecord {
  return {
    id: String(r.id),
    tenantId: String(r.tenant_id),
    principalId: String(r.principal_id),
    agentId: String(r.agent_id),
    agentVersion: Number(r.agent_version),
    status: r.status as SessionStatus,
    title: (r.title as string | null) ?? null,
    lastSequence: Number(r.last_sequence),
    activeRunId: (r.active_run_id as string | null) ?? null,
    lastRunId: (r.last_run_id as string | null) ?? null,
    createdAt: isoOf(r.created_at),
    updatedAt: isoOf(r.updated_at),
  };
}

/** Session list and transcript reads; tenant and principal are WHERE arguments of every query. */
export class PgSessionQueries implements SessionReadModel {
  constructor(private readonly db: Database) {}

  async list(principal: Principal, limit: number, cursor: string | null): Promise<Page<SessionRecord>> {
    const values: unknown[] = [principal.tenantId, principal.principalId, limit + 1];
    let after = '';
    if (cursor !== null) {
      const [updatedAt, id] = decodeCursor(cursor, ['string', 'string'] as const);
      if (!UUID_PATTERN.test(id) || Number.isNaN(Date.parse(updatedAt))) return { items: [], nextCursor: null };
      values.push(updatedAt, id);
      after = 'AND (updated_at, id) < ($4::timestamptz, $5::uuid)';
    }
    const rows = (
      await this.db.query(
        `SELECT s.*, ${lastSequenceSql('s.id')} AS last_sequence FROM sessions s
          WHERE tenant_id = $1 AND principal_id = $2 AND status <> 'deleted' ${after}
          ORDER BY updated_at DESC, id DESC LIMIT $3`,
        values,
      )
    ).rows;
    const items = rows.slice(0, limit).map(toSessionRecord);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.updatedAt, last.id]) : null };
  }

  async messages(
    sessionId: string,
    principal: Principal,
    limit: number,
    cursor: string | null,
  ): Promise<Page<SessionMessage> | null> {
    if (!UUID_PATTERN.test(sessionId)) return null;
    const owned = await this.db.query(
      `SELECT 1 FROM sessions WHERE id = $1 AND tenant_id = $2 AND principal_id = $3 AND status <> 'deleted'`,
      [sessionId, principal.tenantId, principal.principalId],
    );
    if (owned.rows.length === 0) return null;
    const after = cursor === null ? 0 : decodeCursor(cursor, ['number'] as const)[0];
    const rows = (
      await this.db.query<EventRow>(
        `SELECT ${EVENT_COLUMNS} FROM events
          WHERE session_id = $1 AND tenant_id = $2 AND sequence > $3
            AND event_type IN ('user.message.created', 'assistant.message.completed')
          ORDER BY sequence LIMIT $4`,
        [sessionId, principal.tenantId, after, limit + 1],
      )
    ).rows;
    const items: SessionMessage[] = rows.slice(0, limit).map((row) => {
      const e = decodeEvent(row);
      const base = { sequence: e.sequence, runId: e.runId, createdAt: e.createdAt };
      if (e.type === 'user.message.created')
        return { ...base, role: 'user', messageId: e.data.messageId, content: e.data.content };
      if (e.type === 'assistant.message.completed') {
        const content: ContentPart[] = [{ type: 'text', text: e.data.text }];
        return { ...base, role: 'assistant', messageId: e.data.messageId, content };
      }
      throw new Error(`unexpected event type ${e.type}`);
    });
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.sequence]) : null };
  }

  async activeRunCount(tenantId: string): Promise<number> {
    const r = await this.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM runs WHERE tenant_id = $1 AND status NOT IN ('completed', 'failed', 'cancelled')`,
      [tenantId],
    );
    return Number(r.rows[0]?.n ?? 0);
  }
}
