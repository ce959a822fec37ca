import type { Actor } from '../domain/deciders/decider';
import type { MemoryCandidate, MemoryChanges } from '../domain/deciders/memory';
import type { MemoryScope, MemorySensitivity, MemoryStatus, MemoryTrust } from '../domain/memory/memory-record';
import type { Principal } from '../domain/principal';
import type { Page } from './read-models';

/** One long-term memory as the read model holds it (issue 30, ADR 0035). */
export interface MemoryRecord {
  readonly id: string;
  readonly ownerPrincipalId: string;
  readonly scope: MemoryScope;
  readonly agentId: string | null;
  /** Null once deleted. */
  readonly subject: string | null;
  readonly statement: string | null;
  readonly status: MemoryStatus;
  readonly confidence: number;
  readonly sensitivity: MemorySensitivity;
  readonly trust: MemoryTrust;
  readonly attribution: string | null;
  readonly sourceEventIds: readonly number[];
  readonly sourceSessionId: string | null;
  readonly sourceRunId: string | null;
  readonly validFrom: string;
  readonly expiresAt: string | null;
  readonly supersededBy: string | null;
  readonly conflictsWith: readonly string[];
  readonly question: string | null;
  readonly reinforcements: number;
  readonly revision: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly updatedBy: string | null;
}

/** A run that used a memory: its retrieval trace. */
export interface MemoryUse {
  readonly retrievalId: string;
  readonly sessionId: string;
  readonly runId: string | null;
  readonly purpose: 'snapshot' | 'recall';
  readonly score: number | null;
  readonly createdAt: string;
}

/** A source event of a memory, as the dashboard links it. */
export interface MemorySourceEvent {
  readonly id: number;
  readonly sessionId: string;
  readonly sequence: number;
  readonly type: string;
  readonly runId: string | null;
}

export interface MemoryDetail {
  readonly record: MemoryRecord;
  readonly sourceEvents: readonly MemorySourceEvent[];
  readonly usedBy: readonly MemoryUse[];
}

export interface MemoryListFilter {
  readonly subject?: string;
  readonly scope?: MemoryScope;
  readonly status?: MemoryStatus;
  /** Words to find (full-text search over subject and statement). */
  readonly q?: string;
  readonly limit: number;
  readonly cursor: string | null;
}

/** Who recalls, for what. Tenant and principal scope are enforced in SQL. */
export interface RecallQuery {
  readonly tenantId: string;
  readonly principalId: string;
  /** The agent whose `agent`-scoped memories apply; null: none. */
  readonly agentId: string | null;
  readonly query: string | null;
  readonly limit: number;
  /** Include `tentative` memories (from untrusted content); snapshots do not. */
  readonly includeTentative: boolean;
  /** Require a textual match (recall); a snapshot also fills up with the principal's top memories. */
  readonly requireMatch: boolean;
  readonly nowIso: string;
}

export interface RecalledMemory {
  readonly record: MemoryRecord;
  readonly score: number;
}

export interface RecallResult {
  readonly items: readonly RecalledMemory[];
  /** `fts+trgm` or `fts` (pg_trgm missing); `+rerank` when an embedding re-ranker reordered them. */
  readonly method: string;
}

export type RememberOutcome = 'recorded' | 'reinforced' | 'superseded' | 'conflicting' | 'tentative' | 'unchanged';

export interface RememberResult {
  readonly outcome: RememberOutcome;
  readonly memory: MemoryRecord;
  /** Memories the new one superseded or now conflicts with. */
  readonly superseded: readonly string[];
  readonly conflicts: readonly string[];
}

/** A memory write proposed on a principal's behalf (by a tool, formation or a person). */
export interface RememberRequest {
  readonly principal: Principal;
  readonly actor: Actor;
  readonly candidate: MemoryCandidate;
}

/**
 * Long-term memory records: the governed store (writes decided by the memory decider, recorded as
 * events in the owner's memory stream) and its reads. Every read is scoped to the principal's
 * tenant; another principal's memory is not found.
 */
export interface MemoryStore {
  remember(req: RememberRequest): Promise<RememberResult>;
  /** A user's edit; 404 (NotFoundError) for a memory the principal does not own. */
  edit(principal: Principal, memoryId: string, changes: MemoryChanges): Promise<MemoryRecord>;
  /** Deletes the memory and erases its statement from the projection and every event that carried it. */
  forget(principal: Principal, memoryId: string, actor: Actor): Promise<void>;
  get(principal: Principal, memoryId: string): Promise<MemoryDetail | null>;
  list(principal: Principal, filter: MemoryListFilter): Promise<Page<MemoryRecord>>;
  recall(q: RecallQuery): Promise<RecallResult>;
  /** The snapshot a session recorded (`memory.retrieved`, purpose `snapshot`), or null. */
  snapshotOf(sessionId: string, tenantId: string): Promise<{ retrievalId: string; text: string } | null>;
  /** Records `memory.expired` for live memories past `expires_at`; returns how many. */
  expireDue(nowIso: string, limit?: number): Promise<number>;
}
