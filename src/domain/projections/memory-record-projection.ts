import type { EventPayloads, StoredEvent } from '../events/payloads';
import { statementKey, subjectKey } from '../memory/memory-record';
import { distinctSources, type SourceEvent } from '../memory/provenance';
import type { Projection, Row } from './projection';

const MEMORY_EVENTS: ReadonlySet<string> = new Set([
  'memory.recorded',
  'memory.updated',
  'memory.superseded',
  'memory.deleted',
  'memory.expired',
]);

/** Every memory.* event of a record names it; the retrieval trace belongs to memory_retrievals. */
function memoryIdOf(e: StoredEvent): string | null {
  if (!MEMORY_EVENTS.has(e.type)) return null;
  return (e.data as { memoryId: string }).memoryId;
}

/** A source's stream key as `memory_records.source_events` keeps it: `[id, session, sequence]` (ADR 0059). */
export type SourceKey = readonly [number, string, number];

/** The row's source keys as sources (a jsonb array of triples, numbers possibly as strings). */
export function sourcesOfKeys(keys: unknown): SourceEvent[] {
  return ((keys as SourceKey[] | null) ?? []).map(([id, sessionId, sequence]) => ({
    id: Number(id),
    sessionId: String(sessionId),
    sequence: Number(sequence),
  }));
}

/** The record's known source keys with `added`, once each, in id order. */
function withSourceKeys(known: unknown, added: readonly SourceEvent[]): SourceKey[] {
  return distinctSources([...sourcesOfKeys(known), ...added]).map((s) => [s.id, s.sessionId, s.sequence] as const);
}

function recorded(e: StoredEvent<'memory.recorded'>): Row {
  const d = e.data;
  return {
    id: d.memoryId,
    tenant_id: e.tenantId,
    stream_session_id: e.sessionId,
    owner_principal_id: d.ownerPrincipalId,
    scope: d.scope,
    agent_id: d.agentId,
    subject: d.subject,
    subject_key: d.subject === null ? null : subjectKey(d.subject),
    statement: d.statement,
    statement_key: d.statement === null ? null : statementKey(d.statement),
    status: d.status,
    confidence: d.confidence,
    sensitivity: d.sensitivity,
    trust: d.trust,
    attribution: d.attribution,
    source_event_ids: [...d.sourceEventIds],
    source_events: withSourceKeys([], d.sourceEvents),
    source_session_id: d.sourceSessionId,
    source_run_id: d.sourceRunId,
    last_invocation_id: d.invocationId,
    valid_from: d.validFrom,
    expires_at: d.expiresAt,
    superseded_by: null,
    conflicts_with: [...d.conflictsWith],
    question: d.question,
    reinforcements: 0,
    revision: 1,
    created_at: e.createdAt,
    updated_at: e.createdAt,
    updated_by: e.actorId,
  };
}

function updated(row: Row, e: StoredEvent<'memory.updated'>): Row {
  const d: EventPayloads['memory.updated'] = e.data;
  const next: Row = { ...row, revision: Number(row.revision) + 1, updated_at: e.createdAt, updated_by: e.actorId };
  if (d.subject !== undefined) {
    next.subject = d.subject;
    next.subject_key = d.subject === null ? null : subjectKey(d.subject);
  }
  if (d.statement !== undefined) {
    next.statement = d.statement;
    next.statement_key = d.statement === null ? null : statementKey(d.statement);
  }
  if (d.confidence !== undefined) next.confidence = d.confidence;
  if (d.sensitivity !== undefined) next.sensitivity = d.sensitivity;
  if (d.trust !== undefined) next.trust = d.trust;
  if (d.trust === 'user') next.attribution = null;
  if (d.status !== undefined) next.status = d.status;
  if (d.expiresAt !== undefined) next.expires_at = d.expiresAt;
  if (d.conflictsWith !== undefined) next.conflicts_with = [...d.conflictsWith];
  if (d.question !== undefined) next.question = d.question;
  if (d.invocationId !== undefined) next.last_invocation_id = d.invocationId;
  if (d.addedSourceEventIds !== undefined) {
    const sources = new Set<number>((row.source_event_ids as number[]).map(Number));
    for (const id of d.addedSourceEventIds) sources.add(id);
    next.source_event_ids = [...sources].sort((a, b) => a - b);
  }
  if (d.addedSourceEvents !== undefined) next.source_events = withSourceKeys(row.source_events, d.addedSourceEvents);
  if (d.change === 'reinforced') next.reinforcements = Number(row.reinforcements) + 1;
  // A user's edit or confirmation settles the question.
  if (d.change === 'edited') {
    next.question = null;
    next.conflicts_with = [];
  }
  return next;
}

/** The end of a record: its status, and for a deletion no text at all. */
function ended(row: Row, e: StoredEvent): Row {
  const at = { revision: Number(row.revision) + 1, updated_at: e.createdAt, updated_by: e.actorId };
  switch (e.type) {
    case 'memory.superseded':
      return { ...row, ...at, status: 'superseded', superseded_by: e.data.supersededBy, question: null };
    case 'memory.expired':
      return { ...row, ...at, status: 'expired', question: null };
    default:
      return {
        ...row,
        ...at,
        status: 'deleted',
        subject: null,
        subject_key: null,
        statement: null,
        statement_key: null,
        attribution: null,
        question: null,
        conflicts_with: [],
      };
  }
}

/**
 * memory_records: long-term memory (issue 30, ADR 0035), one row per memory, folded from the
 * owner's memory stream. A deleted memory keeps a row (id, owner, status `deleted`) without text.
 * `search` (the full-text vector) is a generated column, not written here.
 */
export const memoryRecordProjection: Projection = {
  name: 'memory_records',
  table: 'memory_records',
  // v2: `source_events` (ADR 0059).
  version: 2,
  keyColumn: 'id',
  columns: [
    'id',
    'tenant_id',
    'stream_session_id',
    'owner_principal_id',
    'scope',
    'agent_id',
    'subject',
    'subject_key',
    'statement',
    'statement_key',
    'status',
    'confidence',
    'sensitivity',
    'trust',
    'attribution',
    'source_event_ids',
    'source_events',
    'source_session_id',
    'source_run_id',
    'last_invocation_id',
    'valid_from',
    'expires_at',
    'superseded_by',
    'conflicts_with',
    'question',
    'reinforcements',
    'revision',
    'created_at',
    'updated_at',
    'updated_by',
  ],
  keyOf: memoryIdOf,
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type === 'memory.recorded') return recorded(e);
    if (!row) return row;
    if (e.type === 'memory.updated') return updated(row, e);
    return ended(row, e);
  },
};

/**
 * memory_retrievals: one row per retrieval trace (`memory.retrieved`), so the dashboard can show
 * which runs used a memory and why (its score).
 */
export const memoryRetrievalProjection: Projection = {
  name: 'memory_retrievals',
  table: 'memory_retrievals',
  version: 1,
  keyColumn: 'id',
  columns: [
    'id',
    'tenant_id',
    'session_id',
    'run_id',
    'purpose',
    'query',
    'invocation_id',
    'method',
    'memory_ids',
    'items',
    'blocked',
    'rendered',
    'created_at',
  ],
  keyOf: (e) => (e.type === 'memory.retrieved' ? e.data.retrievalId : null),
  evolve(row: Row | undefined, e: StoredEvent): Row | undefined {
    if (row || e.type !== 'memory.retrieved') return row;
    const d = e.data;
    return {
      id: d.retrievalId,
      tenant_id: e.tenantId,
      session_id: e.sessionId,
      run_id: e.runId,
      purpose: d.purpose,
      query: d.query,
      invocation_id: d.invocationId,
      method: d.method,
      memory_ids: d.items.map((i) => i.memoryId),
      items: d.items.map((i) => ({ ...i })),
      blocked: [...d.blocked],
      rendered: d.rendered,
      created_at: e.createdAt,
    };
  },
};
