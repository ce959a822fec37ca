import { eventsOrThrow, type Actor } from '../../../domain/deciders/decider';
import {
  memoryDecider,
  type MemoryChanges,
  type MemoryCommand,
  type MemoryView,
  type MemoryWritePolicy,
} from '../../../domain/deciders/memory';
import { sessionDecider } from '../../../domain/deciders/session';
import { NotFoundError } from '../../../domain/errors';
import type { NewEvent } from '../../../domain/events/payloads';
import { deriveSubject, erasableFragments, subjectKey, type MemoryStatus } from '../../../domain/memory/memory-record';
import { createMemoryStream, memoryStreamIdOf } from '../../../domain/memory/memory-stream';
import type { Principal } from '../../../domain/principal';
import type { Clock, IdFactory } from '../../../ports/clock';
import type { Logger } from '../../../ports/logger';
import type {
  MemoryDetail,
  MemoryListFilter,
  MemoryRecord,
  MemoryStore,
  RecallQuery,
  RecallResult,
  RememberRequest,
  RememberResult,
} from '../../../ports/memory-records';
import type { Page } from '../../../ports/read-models';
import type { Database, Queryable } from '../database';
import type { PgAppender } from '../event-store/pg-appender';
import { eraseMemoryEvents, erasableTables, eraseStatement } from './memory-erasure';
import { getMemory, listMemories, recallMemories, recordOf } from './memory-queries';
import { RERANK_POOL_FACTOR, RERANK_POOL_MAX, type MemoryReranker } from './memory-rerank';

export interface PgMemoryRecordsOptions {
  /** Whether `sensitive` memories may be stored (the policy file's `memory.sensitive`). */
  readonly allowSensitive: () => boolean;
  readonly log?: Logger;
  /** Re-ranks recall by embedding similarity (MEMORY_EMBEDDINGS_URL, ADR 0043); absent: the SQL ranking. */
  readonly reranker?: MemoryReranker;
  /** Called after an erasure committed, with the sessions whose events it rewrote (in-process caches). */
  readonly onErased?: (sessionIds: readonly string[]) => void;
}

const ADMIN_ROLES = ['admin', 'owner'];

function viewOf(r: Record<string, unknown>): MemoryView {
  return {
    id: String(r.id),
    ownerPrincipalId: String(r.owner_principal_id),
    scope: r.scope as MemoryView['scope'],
    agentId: (r.agent_id as string | null) ?? null,
    subjectKey: (r.subject_key as string | null) ?? null,
    statementKey: (r.statement_key as string | null) ?? null,
    statement: (r.statement as string | null) ?? null,
    status: r.status as MemoryStatus,
    confidence: Number(r.confidence),
    trust: r.trust as MemoryView['trust'],
    conflictsWith: ((r.conflicts_with as unknown[]) ?? []).map(String),
    lastInvocationId: (r.last_invocation_id as string | null) ?? null,
  };
}

const stateOf = (rows: readonly Record<string, unknown>[]) => ({
  memories: new Map(rows.map((r) => [String(r.id), viewOf(r)])),
});

/**
 * Long-term memory on PostgreSQL (issue 30, ADR 0035). Every write is one transaction on the
 * owner's memory stream: lock the stream, load the memories the command concerns from the read
 * model, let the memory decider decide, append its events (the inline projection writes
 * `memory_records` in the same statement). A deletion also erases the statement everywhere the
 * owner's sessions quoted it, and bumps the read-model generation (it rewrites rows without an append).
 */
export class PgMemoryRecords implements MemoryStore {
  private trigram: Promise<boolean> | null = null;

  constructor(
    private readonly db: Database,
    private readonly appender: PgAppender,
    private readonly clock: Clock,
    private readonly ids: IdFactory,
    private readonly options: PgMemoryRecordsOptions,
  ) {}

  private policyFor(principal: Principal): MemoryWritePolicy {
    return {
      allowSensitive: this.options.allowSensitive(),
      allowTenantScope: ADMIN_ROLES.some((r) => principal.roles.has(r)),
    };
  }

  /** Locks the owner's stream for this transaction and opens it on first use. */
  private async lockStream(client: Queryable, tenantId: string, ownerPrincipalId: string): Promise<string> {
    const streamId = memoryStreamIdOf(tenantId, ownerPrincipalId);
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [streamId]);
    const exists = (await client.query('SELECT 1 FROM sessions WHERE id = $1', [streamId])).rows.length > 0;
    if (!exists) {
      const opened = sessionDecider.decide(createMemoryStream(ownerPrincipalId), sessionDecider.initialState());
      await this.appender.appendIn(client, { sessionId: streamId, tenantId, events: eventsOrThrow(opened) });
    }
    return streamId;
  }

  private async decideAndAppend(
    client: Queryable,
    streamId: string,
    tenantId: string,
    cmd: MemoryCommand,
    rows: readonly Record<string, unknown>[],
  ): Promise<readonly NewEvent[]> {
    const events = eventsOrThrow(memoryDecider.decide(cmd, stateOf(rows)));
    if (events.length > 0) await this.appender.appendIn(client, { sessionId: streamId, tenantId, events });
    return events;
  }

  async remember(req: RememberRequest): Promise<RememberResult> {
    const { principal, actor, candidate } = req;
    const memoryId = this.ids.uuid();
    const key = subjectKey(
      typeof candidate.subject === 'string' && candidate.subject.trim() !== ''
        ? candidate.subject
        : deriveSubject(String(candidate.statement ?? '')),
    );
    const events = await this.db.transaction(async (client) => {
      const streamId = await this.lockStream(client, principal.tenantId, principal.principalId);
      const rows = (
        await client.query(
          `SELECT * FROM memory_records WHERE stream_session_id = $1
              AND (subject_key = $2 OR ($3::uuid IS NOT NULL AND last_invocation_id = $3::uuid))`,
          [streamId, key, candidate.invocationId],
        )
      ).rows;
      const cmd: MemoryCommand = {
        kind: 'RecordMemory',
        actor,
        memoryId,
        ownerPrincipalId: principal.principalId,
        candidate,
        policy: this.policyFor(principal),
        nowIso: this.clock.nowIso(),
      };
      return this.decideAndAppend(client, streamId, principal.tenantId, cmd, rows);
    });
    return this.outcomeOf(principal, events, candidate.invocationId);
  }

  private async outcomeOf(
    principal: Principal,
    events: readonly NewEvent[],
    invocationId: string | null,
  ): Promise<RememberResult> {
    const superseded = events.flatMap((e) =>
      e.type === 'memory.superseded' ? [(e as NewEvent<'memory.superseded'>).data.memoryId] : [],
    );
    const first = events[0];
    let id: string;
    let outcome: RememberResult['outcome'];
    if (!first) {
      const row = (
        await this.db.query(
          `SELECT id FROM memory_records WHERE tenant_id = $1 AND owner_principal_id = $2 AND last_invocation_id = $3`,
          [principal.tenantId, principal.principalId, invocationId],
        )
      ).rows[0];
      if (!row) throw new NotFoundError('the memory this call wrote is gone', { invocationId });
      id = String(row.id);
      outcome = 'unchanged';
    } else if (first.type === 'memory.updated') {
      id = (first as NewEvent<'memory.updated'>).data.memoryId;
      outcome = 'reinforced';
    } else {
      const d = (first as NewEvent<'memory.recorded'>).data;
      id = d.memoryId;
      outcome = superseded.length > 0 ? 'superseded' : d.status === 'active' ? 'recorded' : d.status;
    }
    const detail = await getMemory(this.db, principal, id);
    if (!detail) throw new NotFoundError(`memory ${id} does not exist`, { memoryId: id });
    const conflicts = outcome === 'conflicting' || outcome === 'tentative' ? [...detail.record.conflictsWith] : [];
    return { outcome, memory: detail.record, superseded, conflicts };
  }

  /** The row of a memory in the principal's tenant (its owner's stream decides), or NotFound. */
  private async target(client: Queryable, principal: Principal, memoryId: string) {
    const row = (
      await client.query(`SELECT * FROM memory_records WHERE tenant_id = $1 AND id = $2`, [
        principal.tenantId,
        memoryId,
      ])
    ).rows[0];
    if (!row || row.owner_principal_id !== principal.principalId || row.status === 'deleted')
      throw new NotFoundError(`memory ${memoryId} does not exist`, { memoryId });
    return row;
  }

  async edit(principal: Principal, memoryId: string, changes: MemoryChanges): Promise<MemoryRecord> {
    await this.db.transaction(async (client) => {
      await this.target(client, principal, memoryId);
      const streamId = await this.lockStream(client, principal.tenantId, principal.principalId);
      const rows = (
        await client.query(
          `SELECT * FROM memory_records WHERE stream_session_id = $1
              AND (id = $2 OR id IN (SELECT jsonb_array_elements_text(conflicts_with)::uuid
                                       FROM memory_records WHERE id = $2))`,
          [streamId, memoryId],
        )
      ).rows;
      const cmd: MemoryCommand = {
        kind: 'EditMemory',
        actor: { actorType: 'user', actorId: principal.principalId },
        memoryId,
        byPrincipalId: principal.principalId,
        changes,
        policy: this.policyFor(principal),
      };
      await this.decideAndAppend(client, streamId, principal.tenantId, cmd, rows);
    });
    const detail = await getMemory(this.db, principal, memoryId);
    if (!detail) throw new NotFoundError(`memory ${memoryId} does not exist`, { memoryId });
    return detail.record;
  }

  async forget(principal: Principal, memoryId: string, actor: Actor): Promise<void> {
    const erased = await this.db.transaction(async (client) => {
      await this.target(client, principal, memoryId);
      const streamId = await this.lockStream(client, principal.tenantId, principal.principalId);
      const row = (
        await client.query<Record<string, unknown>>(`SELECT * FROM memory_records WHERE id = $1 FOR UPDATE`, [memoryId])
      ).rows[0];
      const statement = row.statement as string | null;
      const cmd: MemoryCommand = { kind: 'DeleteMemory', actor, memoryId, byPrincipalId: principal.principalId };
      await this.decideAndAppend(client, streamId, principal.tenantId, cmd, [row]);
      await eraseMemoryEvents(client, streamId, memoryId);
      // Where the statement may have been quoted: the owner's sessions (everyone's, for a tenant-wide memory).
      const sessions = (
        await client.query<{ id: string }>(
          `SELECT id FROM sessions WHERE tenant_id = $1 AND ($2::boolean OR principal_id = $3 OR id = $4)`,
          [principal.tenantId, row.scope === 'tenant', principal.principalId, streamId],
        )
      ).rows.map((r) => r.id);
      if (statement) {
        const tables = await erasableTables(client);
        for (const text of erasableFragments(statement)) await eraseStatement(client, tables, sessions, text);
      }
      // The rows were rewritten without an append: rows cached before this must not be written back.
      await client.query('UPDATE read_model_generation SET generation = generation + 1');
      return sessions;
    });
    this.options.onErased?.(erased);
  }

  get(principal: Principal, memoryId: string): Promise<MemoryDetail | null> {
    return getMemory(this.db, principal, memoryId);
  }

  list(principal: Principal, filter: MemoryListFilter): Promise<Page<MemoryRecord>> {
    return listMemories(this.db, principal, filter);
  }

  async recall(q: RecallQuery): Promise<RecallResult> {
    const trigram = await this.hasTrigram();
    const reranker = this.options.reranker;
    const query = q.query?.trim() ? q.query : null;
    if (!reranker || query === null || q.limit <= 0) return recallMemories(this.db, trigram, q);
    // The SQL recall proposes a wider pool (scope enforced there); the re-ranker orders it.
    const pool = Math.min(Math.max(q.limit * RERANK_POOL_FACTOR, q.limit), RERANK_POOL_MAX);
    const sql = await recallMemories(this.db, trigram, { ...q, limit: pool });
    const reranked = await reranker.rerank(this.db, query.slice(0, 2000), sql.items);
    if (!reranked) return { items: sql.items.slice(0, q.limit), method: sql.method };
    return { items: reranked.items.slice(0, q.limit), method: `${sql.method}+rerank:${reranked.engine}` };
  }

  async snapshotOf(sessionId: string, tenantId: string): Promise<{ retrievalId: string; text: string } | null> {
    const row = (
      await this.db.query<{ id: string; rendered: string }>(
        `SELECT id, rendered FROM memory_retrievals
          WHERE session_id = $1 AND tenant_id = $2 AND purpose = 'snapshot' AND rendered IS NOT NULL
          ORDER BY created_at LIMIT 1`,
        [sessionId, tenantId],
      )
    ).rows[0];
    return row ? { retrievalId: row.id, text: row.rendered } : null;
  }

  /** Whether pg_trgm is installed; without it recall is full-text only (one warning, with the fix). */
  private hasTrigram(): Promise<boolean> {
    this.trigram ??= this.db.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'`).then((r) => {
      if (r.rows.length === 0)
        this.options.log?.warn('pg_trgm is not installed: memory recall uses full-text search only', {
          fix: 'install the PostgreSQL contrib modules and run CREATE EXTENSION pg_trgm (as a superuser)',
        });
      return r.rows.length > 0;
    });
    return this.trigram;
  }

  async expireDue(nowIso: string, limit = 100): Promise<number> {
    const due = (
      await this.db.query<{ id: string; tenant_id: string; owner_principal_id: string }>(
        `SELECT id, tenant_id, owner_principal_id FROM memory_records
          WHERE status IN ('active', 'tentative', 'conflicting') AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
        [nowIso, limit],
      )
    ).rows;
    let expired = 0;
    for (const d of due) {
      const events = await this.db.transaction(async (client) => {
        const streamId = await this.lockStream(client, d.tenant_id, d.owner_principal_id);
        const rows = (await client.query(`SELECT * FROM memory_records WHERE id = $1`, [d.id])).rows;
        const cmd: MemoryCommand = { kind: 'ExpireMemory', actor: { actorType: 'system' }, memoryId: d.id };
        return this.decideAndAppend(client, streamId, d.tenant_id, cmd, rows);
      });
      expired += events.length;
    }
    return expired;
  }
}

export { recordOf };
