import type { PostedNotification } from '../../../domain/deciders/notification';
import type { Principal } from '../../../domain/principal';
import {
  streamIdOf,
  type NotificationInbox,
  type NotificationRecord,
  type StreamedNotification,
  type StreamPosition,
} from '../../../ports/notifications';
import type { Page } from '../../../ports/read-models';
import type { Database } from '../database';
import { contentSql } from './notification-content';
import { decodeCursor, encodeCursor, isoOf, isoOrNull, UUID_PATTERN } from '../keyset-cursor';

/**
 * The principal's notifications: named to it, or to no one and about a session it owns ($1 tenant,
 * $2 principal). Joined on the session because a run's events do not all name its principal.
 */
const MINE = `n.tenant_id = $1 AND (n.principal_id = $2 OR (n.principal_id IS NULL AND EXISTS (
  SELECT 1 FROM sessions s WHERE s.id = n.session_id AND s.tenant_id = $1 AND s.principal_id = $2)))
  AND NOT EXISTS (SELECT 1 FROM notification_preferences p WHERE p.tenant_id = $1 AND p.principal_id = $2
                   AND p.kinds->>n.kind IN ('webhook', 'none'))`;

/** The notification's content, only for a principal ($1, $2) whose preference is `content: full`. */
const CONTENT = `CASE WHEN EXISTS (SELECT 1 FROM notification_preferences p WHERE p.tenant_id = $1
  AND p.principal_id = $2 AND p.content = 'full') THEN ${contentSql('n')} END AS content`;

const ZERO: StreamPosition = { transactionId: '0', position: '0' };

function toRecord(r: Record<string, unknown>): NotificationRecord {
  return {
    id: String(r.id),
    kind: String(r.kind),
    dedupeKey: String(r.dedupe_key),
    sessionId: String(r.session_id),
    runId: (r.run_id as string | null) ?? null,
    subjectId: String(r.subject_id),
    summary: (r.summary as Record<string, unknown>) ?? {},
    links: (r.links as Record<string, string>) ?? {},
    createdAt: isoOf(r.created_at),
    readAt: isoOrNull(r.read_at),
    ...(r.content !== undefined && r.content !== null ? { content: r.content as Record<string, unknown> } : {}),
  };
}

/** Reads the `notifications` projection and writes its operational `read_at` column. */
export class PgNotificationInbox implements NotificationInbox {
  constructor(private readonly db: Database) {}

  async list(principal: Principal, limit: number, cursor: string | null): Promise<Page<NotificationRecord>> {
    const values: unknown[] = [principal.tenantId, principal.principalId, limit + 1];
    let after = '';
    if (cursor !== null) {
      const [read, createdAt, id] = decodeCursor(cursor, ['number', 'string', 'string'] as const);
      if (!UUID_PATTERN.test(id) || Number.isNaN(Date.parse(createdAt))) return { items: [], nextCursor: null };
      values.push(read, createdAt, id);
      // Ascending on "is read", descending on time: unread rows sort first.
      after = ` AND ((n.read_at IS NOT NULL)::int > $4 OR ((n.read_at IS NOT NULL)::int = $4 AND (n.created_at, n.id) < ($5::timestamptz, $6::uuid)))`;
    }
    const rows = (
      await this.db.query(
        `SELECT n.*, ${CONTENT} FROM notifications n WHERE ${MINE}${after}
          ORDER BY (n.read_at IS NOT NULL), n.created_at DESC, n.id DESC LIMIT $3`,
        values,
      )
    ).rows;
    const items = rows.slice(0, limit).map(toRecord);
    const last = items[items.length - 1];
    return {
      items,
      nextCursor:
        rows.length > limit && last ? encodeCursor([last.readAt === null ? 0 : 1, last.createdAt, last.id]) : null,
    };
  }

  async summary(principal: Principal) {
    // The stream position first: a row committed after it is past it (or behind the horizon then).
    const at = await this.db.query<{ tx: string; pos: string }>(
      `SELECT transaction_id::text AS tx, stream_position::text AS pos FROM notifications
        WHERE tenant_id = $1 AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY transaction_id DESC, stream_position DESC LIMIT 1`,
      [principal.tenantId],
    );
    const r = await this.db.query<{ kind: string; unread: string; total: string }>(
      `SELECT n.kind, count(*) FILTER (WHERE n.read_at IS NULL) AS unread, count(*) AS total
         FROM notifications n WHERE ${MINE} GROUP BY n.kind ORDER BY n.kind`,
      [principal.tenantId, principal.principalId],
    );
    const byKind: Record<string, { unread: number; total: number }> = {};
    let unread = 0;
    for (const row of r.rows) {
      byKind[row.kind] = { unread: Number(row.unread), total: Number(row.total) };
      unread += Number(row.unread);
    }
    const last = at.rows[0];
    return { unread, byKind, streamId: streamIdOf(last ? { transactionId: last.tx, position: last.pos } : ZERO) };
  }

  async streamAfter(
    principal: Principal,
    after: StreamPosition | null,
    limit: number,
  ): Promise<{ items: StreamedNotification[]; held: boolean }> {
    const from = after ?? ZERO;
    // Rows at or past the horizon sort last (their transaction ids are the largest): the visible
    // prefix is what may be sent; anything after it is held back until its transaction is behind.
    const r = await this.db.query(
      `SELECT n.*, ${CONTENT}, n.transaction_id::text AS tx, n.stream_position::text AS pos,
              n.transaction_id < pg_snapshot_xmin(pg_current_snapshot()) AS visible
         FROM notifications n
        WHERE ${MINE} AND (n.transaction_id, n.stream_position) > ($3::xid8, $4::bigint)
        ORDER BY n.transaction_id, n.stream_position LIMIT $5`,
      [principal.tenantId, principal.principalId, from.transactionId, from.position, limit + 1],
    );
    const items: StreamedNotification[] = [];
    for (const row of r.rows) {
      if (row.visible !== true || items.length === limit) break;
      items.push({ ...toRecord(row), at: { transactionId: String(row.tx), position: String(row.pos) } });
    }
    return { items, held: r.rows.some((row) => row.visible !== true) };
  }

  async markRead(principal: Principal, id: string): Promise<NotificationRecord | null> {
    if (!UUID_PATTERN.test(id)) return null;
    // COALESCE keeps the first read time: marking twice changes nothing.
    const r = await this.db.query(
      `UPDATE notifications n SET read_at = COALESCE(n.read_at, now()) WHERE n.id = $3 AND ${MINE} RETURNING n.*`,
      [principal.tenantId, principal.principalId, id],
    );
    return r.rows[0] ? toRecord(r.rows[0]) : null;
  }

  async markAllRead(principal: Principal): Promise<number> {
    const r = await this.db.query(`UPDATE notifications n SET read_at = now() WHERE n.read_at IS NULL AND ${MINE}`, [
      principal.tenantId,
      principal.principalId,
    ]);
    return r.rowCount ?? 0;
  }

  async findPosted(tenantId: string, streamId: string): Promise<PostedNotification | null> {
    const r = await this.getPosted(tenantId, streamId);
    if (r === null) return null;
    return {
      principalId: r.principalId,
      kind: r.kind,
      summary: r.summary as Record<string, string>,
      links: r.links,
    };
  }

  async getPosted(tenantId: string, streamId: string) {
    const r = await this.db.query(
      `SELECT n.* FROM notifications n WHERE n.tenant_id = $1 AND n.session_id = $2 AND n.dedupe_key = $3`,
      [tenantId, streamId, `posted:${streamId}`],
    );
    return r.rows[0] ? { ...toRecord(r.rows[0]), principalId: String(r.rows[0].principal_id) } : null;
  }

  async markSubjectRead(principal: Principal, subjectId: string): Promise<number> {
    const r = await this.db.query(
      `UPDATE notifications n SET read_at = now() WHERE n.read_at IS NULL AND n.subject_id = $3 AND ${MINE}`,
      [principal.tenantId, principal.principalId, subjectId],
    );
    return r.rowCount ?? 0;
  }
}
