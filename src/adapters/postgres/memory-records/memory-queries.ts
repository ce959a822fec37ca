import type { MemoryScope, MemorySensitivity, MemoryStatus, MemoryTrust } from '../../../domain/memory/memory-record';
import type { SourceEvent } from '../../../domain/memory/provenance';
import type { Principal } from '../../../domain/principal';
import { sourcesOfKeys } from '../../../domain/projections/memory-record-projection';
import type {
  MemoryDetail,
  MemoryListFilter,
  MemoryRecord,
  MemorySourceEvent,
  MemoryUse,
  RecallQuery,
  RecallResult,
} from '../../../ports/memory-records';
import type { Page } from '../../../ports/read-models';
import type { Queryable } from '../database';
import { decodeCursor, encodeCursor, isoOf, isoOrNull } from '../keyset-cursor';

/** The read side of long-term memory: list, detail and hybrid recall, scoped in SQL (ADR 0035). */

export function recordOf(r: Record<string, unknown>): MemoryRecord {
  return {
    id: String(r.id),
    ownerPrincipalId: String(r.owner_principal_id),
    scope: r.scope as MemoryScope,
    agentId: (r.agent_id as string | null) ?? null,
    subject: (r.subject as string | null) ?? null,
    statement: (r.statement as string | null) ?? null,
    status: r.status as MemoryStatus,
    confidence: Number(r.confidence),
    sensitivity: r.sensitivity as MemorySensitivity,
    trust: r.trust as MemoryTrust,
    attribution: (r.attribution as string | null) ?? null,
    sourceEventIds: ((r.source_event_ids as unknown[]) ?? []).map(Number),
    sourceSessionId: (r.source_session_id as string | null) ?? null,
    sourceRunId: (r.source_run_id as string | null) ?? null,
    validFrom: isoOf(r.valid_from),
    expiresAt: isoOrNull(r.expires_at),
    supersededBy: (r.superseded_by as string | null) ?? null,
    conflictsWith: ((r.conflicts_with as unknown[]) ?? []).map(String),
    question: (r.question as string | null) ?? null,
    reinforcements: Number(r.reinforcements),
    revision: Number(r.revision),
    createdAt: isoOf(r.created_at),
    updatedAt: isoOf(r.updated_at),
    updatedBy: (r.updated_by as string | null) ?? null,
  };
}

/** What a principal may see: its own memories (any scope) and the tenant-wide ones of its tenant. */
const VISIBLE = `m.tenant_id = $1 AND (m.owner_principal_id = $2 OR m.scope = 'tenant')`;

/** `websearch_to_tsquery` with its AND turned into OR: recall wants any word, ranked by how many match. */
export const ANY_WORD_QUERY = `replace(websearch_to_tsquery('english'::regconfig, $Q)::text, ' & ', ' | ')::tsquery`;

export async function listMemories(
  q: Queryable,
  principal: Principal,
  f: MemoryListFilter,
): Promise<Page<MemoryRecord>> {
  const values: unknown[] = [principal.tenantId, principal.principalId];
  const where = [VISIBLE];
  const add = (sql: (p: string) => string, v: unknown) => {
    values.push(v);
    where.push(sql(`$${values.length}`));
  };
  // Deleted memories are listed only when asked for by status: they have no text left to show.
  if (f.status) add((p) => `m.status = ${p}`, f.status);
  else where.push(`m.status <> 'deleted'`);
  if (f.scope) add((p) => `m.scope = ${p}`, f.scope);
  if (f.subject)
    add(
      (p) => `m.subject ILIKE '%' || ${p} || '%'`,
      f.subject.replace(/[\\%_]/g, (c) => `\\${c}`),
    );
  if (f.q) add((p) => `m.search @@ ${ANY_WORD_QUERY.replace('$Q', p)}`, f.q);
  if (f.cursor) {
    const [at, id] = decodeCursor(f.cursor, ['string', 'string'] as const);
    values.push(at, id);
    where.push(`(m.updated_at, m.id) < ($${values.length - 1}::timestamptz, $${values.length}::uuid)`);
  }
  values.push(f.limit + 1);
  const rows = (
    await q.query(
      `SELECT m.*, m.updated_at::text AS updated_at_text FROM memory_records m WHERE ${where.join(' AND ')}
        ORDER BY m.updated_at DESC, m.id DESC LIMIT $${values.length}`,
      values,
    )
  ).rows;
  const items = rows.slice(0, f.limit).map(recordOf);
  const last = items[items.length - 1];
  return {
    items,
    nextCursor: rows.length > f.limit && last ? encodeCursor([rowTime(rows[f.limit - 1]), last.id]) : null,
  };
}

/** The row's `updated_at` with microseconds (a JS Date keeps only milliseconds). */
const rowTime = (r: Record<string, unknown>): string =>
  typeof r.updated_at_text === 'string' ? r.updated_at_text : isoOf(r.updated_at);

/**
 * Source keys read by one statement. The statement has a fixed shape, so it is prepared once per
 * connection and planned generically: planning a join over a list of keys cost more than the read
 * (ADR 0059). Most memories have one or two sources; a short list repeats its last key.
 */
export const KEYS_PER_SOURCE_READ = 4;

/** Source events by their stream keys: one probe of the events' primary key each (ADR 0059). */
export const SOURCES_BY_KEY_SQL = `SELECT id, session_id, sequence, event_type, run_id FROM events
  WHERE tenant_id = $1 AND (${Array.from(
    { length: KEYS_PER_SOURCE_READ },
    (_, i) => `(session_id = $${3 * i + 2} AND sequence = $${3 * i + 3} AND id = $${3 * i + 4})`,
  ).join(' OR ')})`;

/** The values of one `SOURCES_BY_KEY_SQL` read: up to `KEYS_PER_SOURCE_READ` keys, the last repeated (it matches its row once). */
export function sourceKeyValues(tenantId: string, keys: readonly SourceEvent[]): unknown[] {
  if (keys.length === 0 || keys.length > KEYS_PER_SOURCE_READ)
    throw new RangeError(`a source read takes 1 to ${KEYS_PER_SOURCE_READ} keys, not ${keys.length}`);
  const padded = Array.from({ length: KEYS_PER_SOURCE_READ }, (_, i) => keys[Math.min(i, keys.length - 1)]);
  return [tenantId, ...padded.flatMap((k) => [k.sessionId, k.sequence, k.id])];
}

/** Source events by id alone: a bitmap scan of `events_id_brin`, reading every range summary (ADR 0055). */
export const SOURCES_BY_ID_SQL = `SELECT id, session_id, sequence, event_type, run_id FROM events
  WHERE id = ANY($1::bigint[]) AND tenant_id = $2`;

interface SourceRow {
  id: string;
  session_id: string;
  sequence: string;
  event_type: string;
  run_id: string | null;
}

/**
 * A memory's source events, in id order (ADR 0059): those whose stream key the record keeps by that
 * key; the rest (sources recorded before the keys were) by id alone.
 */
async function readSources(
  q: Queryable,
  principal: Principal,
  ids: readonly number[],
  keys: readonly SourceEvent[],
): Promise<SourceRow[]> {
  const keyed = keys.filter((k) => ids.includes(k.id));
  const unkeyed = ids.filter((id) => !keyed.some((k) => k.id === id));
  const rows: SourceRow[] = [];
  for (let i = 0; i < keyed.length; i += KEYS_PER_SOURCE_READ) {
    const values = sourceKeyValues(principal.tenantId, keyed.slice(i, i + KEYS_PER_SOURCE_READ));
    rows.push(...(await q.query<SourceRow>({ name: 'agent_memory_sources', text: SOURCES_BY_KEY_SQL, values })).rows);
  }
  if (unkeyed.length > 0) {
    const r = await q.query<SourceRow>(SOURCES_BY_ID_SQL, [unkeyed, principal.tenantId]);
    rows.push(...r.rows);
  }
  return rows.sort((a, b) => Number(a.id) - Number(b.id));
}

export async function getMemory(q: Queryable, principal: Principal, memoryId: string): Promise<MemoryDetail | null> {
  const row = (
    await q.query(`SELECT m.* FROM memory_records m WHERE ${VISIBLE} AND m.id = $3 AND m.status <> 'deleted'`, [
      principal.tenantId,
      principal.principalId,
      memoryId,
    ])
  ).rows[0];
  if (!row) return null;
  const record = recordOf(row);
  const sources = await readSources(q, principal, record.sourceEventIds, sourcesOfKeys(row.source_events));
  const uses = (
    await q.query<{
      id: string;
      session_id: string;
      run_id: string | null;
      purpose: string;
      items: unknown;
      created_at: Date;
    }>(
      `SELECT id, session_id, run_id, purpose, items, created_at FROM memory_retrievals
        WHERE tenant_id = $1 AND memory_ids @> jsonb_build_array($2::text)
        ORDER BY created_at DESC LIMIT 50`,
      [principal.tenantId, memoryId],
    )
  ).rows;
  const sourceEvents: MemorySourceEvent[] = sources.map((s) => ({
    id: Number(s.id),
    sessionId: s.session_id,
    sequence: Number(s.sequence),
    type: s.event_type,
    runId: s.run_id,
  }));
  const usedBy: MemoryUse[] = uses.map((u) => ({
    retrievalId: u.id,
    sessionId: u.session_id,
    runId: u.run_id,
    purpose: u.purpose as MemoryUse['purpose'],
    score: (u.items as { memoryId: string; score: number }[]).find((i) => i.memoryId === memoryId)?.score ?? null,
    createdAt: isoOf(u.created_at),
  }));
  return { record, sourceEvents, usedBy };
}

/**
 * Hybrid recall in one statement (ADR 0035): full-text rank (`ts_rank_cd` over the generated
 * vector, any query word) and, with pg_trgm, word similarity of the query to subject + statement;
 * relevance weighted by confidence, recency (90-day half-life-like decay) and status, plus a small
 * bonus for the principal's own memories over tenant-wide ones. Scope is a WHERE clause: another
 * principal's principal- or agent-scoped memory, or another tenant's, is never a candidate.
 */
export function recallSql(trigram: boolean): string {
  const sim = trigram
    ? `word_similarity($3::text, coalesce(m.subject, '') || ' ' || coalesce(m.statement, ''))`
    : `0::real`;
  return `
    WITH q AS (SELECT ${ANY_WORD_QUERY.replace('$Q', "coalesce($3::text, '')")} AS tsq)
    SELECT m.*, s.score FROM memory_records m CROSS JOIN q
    CROSS JOIN LATERAL (SELECT ts_rank_cd(m.search, q.tsq, 32) AS fts, ${sim} AS sim) r
    CROSS JOIN LATERAL (SELECT (CASE m.status WHEN 'tentative' THEN 0.5 WHEN 'conflicting' THEN 0.8 ELSE 1 END)
                              * (0.5 + 0.5 * m.confidence)
                              * (0.75 + 0.25 * exp(-greatest(extract(epoch FROM $6::timestamptz - m.updated_at), 0) / 7776000.0))
                              AS prior) p
    CROSS JOIN LATERAL (SELECT (0.6 * r.fts + 0.4 * r.sim) AS relevance) v
    CROSS JOIN LATERAL (SELECT round((v.relevance * p.prior + 0.05 * p.prior
                                      + CASE WHEN m.scope = 'tenant' THEN 0 ELSE 0.02 END)::numeric, 4)::float8 AS score) s
    WHERE ${VISIBLE}
      AND (m.scope <> 'agent' OR m.agent_id = $4)
      AND m.status = ANY($5::text[])
      AND (m.expires_at IS NULL OR m.expires_at > $6::timestamptz)
      AND (NOT $7::boolean OR m.search @@ q.tsq OR r.sim >= 0.5)
    ORDER BY s.score DESC, m.updated_at DESC, m.id
    LIMIT $8`;
}

const RECALL_TRGM = recallSql(true);
const RECALL_FTS = recallSql(false);

export async function recallMemories(q: Queryable, trigram: boolean, r: RecallQuery): Promise<RecallResult> {
  const statuses = r.includeTentative ? ['active', 'conflicting', 'tentative'] : ['active', 'conflicting'];
  const query = r.query && r.query.trim() !== '' ? r.query.slice(0, 2000) : null;
  // Named: planned once per connection (behind a transaction pooler the Database sends it unnamed).
  // Recall runs on every session's first context build (the snapshot), where planning this
  // statement was a measurable share of its time (bench/RESULTS.md, memory).
  const rows = (
    await q.query({
      name: trigram ? 'agent_memory_recall_trgm' : 'agent_memory_recall_fts',
      text: trigram ? RECALL_TRGM : RECALL_FTS,
      values: [
        r.tenantId,
        r.principalId,
        query,
        r.agentId,
        statuses,
        r.nowIso,
        r.requireMatch && query !== null,
        r.limit,
      ],
    })
  ).rows;
  // Recall that must match but has no query matches nothing.
  const items =
    r.requireMatch && query === null ? [] : rows.map((row) => ({ record: recordOf(row), score: Number(row.score) }));
  return { items, method: trigram ? 'fts+trgm' : 'fts' };
}
