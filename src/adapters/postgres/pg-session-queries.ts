import type { ContentPart } from '../../domain/conversation/items';
import type { Principal } from '../../domain/principal';
import type { SessionRecord, SessionStatus } from '../../domain/session';
import type { ForkNode, Page, SessionMessage, SessionReadModel } from '../../ports/read-models';
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
    queuedRunIds: (r.queued_run_ids as string[] | null | undefined) ?? [],
    lastRunId: (r.last_run_id as string | null) ?? null,
    createdAt: isoOf(r.created_at),
    updatedAt: isoOf(r.updated_at),
    parentSessionId: (r.parent_session_id as string | null) ?? null,
    forkedAtSequence: r.forked_at_sequence == null ? null : Number(r.forked_at_sequence),
  };
}

/**
 * The sessions of tenant $1 whose title or user/assistant message text matches the tsquery $Q. Each
 * arm is an expression the migration `SessionSearch` indexed with GIN (`sessions_title_search_idx`,
 * `events_message_search_idx`), so a search reads the indexes, not the tables.
 */
const SEARCH_HITS_SQL = `
  SELECT t.id FROM sessions t
   WHERE t.tenant_id = $1 AND to_tsvector('simple'::regconfig, coalesce(t.title, '')) @@ to_tsquery('simple', $Q)
  UNION
  SELECT e.session_id FROM events e
   WHERE e.tenant_id = $1 AND e.event_type IN ('user.message.created', 'assistant.message.completed')
     AND to_tsvector('simple'::regconfig, session_message_text(e.event_type, e.payload)) @@ to_tsquery('simple', $Q)`;

/**
 * The streams a session's history reads (issue 33): the session itself (its sequences above its fork
 * point, `lo`), then each ancestor up to the point the forks below it leave (`hi`: the lowest of
 * them, since a fork may leave its parent inside the parent's own inherited prefix); a session that
 * is not a fork is the chain's only member. Sequences continue across a fork, so the members' ranges
 * are disjoint and ordered. $1: the session, $2: its tenant.
 */
const FORK_CHAIN_SQL = `chain(sid, parent, lo, hi) AS (
    SELECT id, parent_session_id, coalesce(forked_at_sequence, 0), 9223372036854775807::bigint
      FROM sessions WHERE id = $1 AND tenant_id = $2
    UNION ALL
    SELECT p.id, p.parent_session_id, coalesce(p.forked_at_sequence, 0), least(c.lo, c.hi)
      FROM sessions p JOIN chain c ON p.id = c.parent AND p.tenant_id = $2)`;

/** The tree of `rows` (sessions with their parent ids, oldest first) under `rootId`. */
function forkTreeOf(rows: readonly Record<string, unknown>[], rootId: string): ForkNode {
  const nodes = new Map<string, ForkNode & { children: ForkNode[] }>();
  for (const r of rows) {
    nodes.set(String(r.id), {
      id: String(r.id),
      title: (r.title as string | null) ?? null,
      status: r.status as SessionStatus,
      parentSessionId: (r.parent_session_id as string | null) ?? null,
      forkedAtSequence: r.forked_at_sequence == null ? null : Number(r.forked_at_sequence),
      createdAt: isoOf(r.created_at),
      children: [],
    });
  }
  for (const n of nodes.values())
    if (n.id !== rootId && n.parentSessionId) nodes.get(n.parentSessionId)?.children.push(n);
  return nodes.get(rootId)!;
}

/**
 * A tsquery that matches text containing every word of `search` as a word prefix ("quart rep"
 * finds "quarterly report"), or null when it has no words. Only letters, digits and underscores
 * reach the query, so no tsquery syntax from the user does.
 */
export function prefixQuery(search: string): string | null {
  const words = search
    .toLowerCase()
    .split(/[^\p{L}\p{N}_]+/u)
    .filter((w) => w !== '')
    .slice(0, 16);
  return words.length === 0 ? null : words.map((w) => `${w}:*`).join(' & ');
}

/** Session list and transcript reads; tenant and principal are WHERE arguments of every query. */
export class PgSessionQueries implements SessionReadModel {
  constructor(private readonly db: Database) {}

  async list(
    principal: Principal,
    limit: number,
    cursor: string | null,
    search: string | null = null,
  ): Promise<Page<SessionRecord>> {
    const values: unknown[] = [principal.tenantId, principal.principalId, limit + 1];
    let after = '';
    if (cursor !== null) {
      const [updatedAt, id] = decodeCursor(cursor, ['string', 'string'] as const);
      if (!UUID_PATTERN.test(id) || Number.isNaN(Date.parse(updatedAt))) return { items: [], nextCursor: null };
      values.push(updatedAt, id);
      after = `AND (updated_at, id) < ($4::timestamptz, $5::uuid)`;
    }
    let matching = '';
    if (search !== null) {
      const query = prefixQuery(search);
      if (query === null) return { items: [], nextCursor: null };
      values.push(query);
      matching = `AND s.id IN (${SEARCH_HITS_SQL.replaceAll('$Q', `$${values.length}`)})`;
    }
    const rows = (
      await this.db.query(
        `SELECT s.*, ${lastSequenceSql('s.id')} AS last_sequence FROM sessions s
          WHERE tenant_id = $1 AND principal_id = $2 AND status <> 'deleted' ${after} ${matching}
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
        `WITH RECURSIVE ${FORK_CHAIN_SQL}
         SELECT ${EVENT_COLUMNS} FROM chain c JOIN events
             ON session_id = c.sid AND sequence > c.lo AND sequence <= c.hi
          WHERE tenant_id = $2 AND sequence > $3
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

  async forkTree(sessionId: string, principal: Principal): Promise<ForkNode | null> {
    if (!UUID_PATTERN.test(sessionId)) return null;
    const owner = [principal.tenantId, principal.principalId];
    const root = await this.db.query<{ id: string }>(
      `WITH RECURSIVE up AS (
         SELECT id, parent_session_id, 0 AS depth FROM sessions
          WHERE id = $1 AND tenant_id = $2 AND principal_id = $3 AND status <> 'deleted'
         UNION ALL
         SELECT s.id, s.parent_session_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.parent_session_id
          WHERE s.tenant_id = $2 AND s.principal_id = $3)
       SELECT id FROM up ORDER BY depth DESC LIMIT 1`,
      [sessionId, ...owner],
    );
    if (root.rows.length === 0) return null;
    const rows = (
      await this.db.query(
        `WITH RECURSIVE down AS (
           SELECT * FROM sessions WHERE id = $1
           UNION ALL
           SELECT s.* FROM sessions s JOIN down d ON s.parent_session_id = d.id
            WHERE s.tenant_id = $2 AND s.principal_id = $3)
         SELECT id, title, status, parent_session_id, forked_at_sequence, created_at FROM down
          ORDER BY created_at, id`,
        [root.rows[0].id, ...owner],
      )
    ).rows;
    return forkTreeOf(rows, root.rows[0].id);
  }

  async activeRunCount(tenantId: string): Promise<number> {
    const r = await this.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM runs WHERE tenant_id = $1 AND status NOT IN ('completed', 'failed', 'cancelled', 'interrupted')`,
      [tenantId],
    );
    return Number(r.rows[0]?.n ?? 0);
  }
}
