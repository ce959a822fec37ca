import { eventsOrThrow, WORKER } from '../domain/deciders/decider';
import { memoryDecider } from '../domain/deciders/memory';
import type { NewEvent } from '../domain/events/payloads';
import { renderMemorySection } from '../domain/memory/render';
import type { MemoryStore } from '../ports/memory-records';

/** Long-term memory for the context engine (ADR 0035): where snapshots come from and how many memories they hold. */
export interface MemorySnapshotOptions {
  readonly store: Pick<MemoryStore, 'recall' | 'snapshotOf'>;
  /** Memories in a snapshot at most (MEMORY_SNAPSHOT_ITEMS); 0 takes none. */
  readonly items: number;
}

/** A session's memory section: the retrieval that took it and the text the model sees. */
export interface MemorySection {
  readonly retrievalId: string;
  readonly text: string;
}

export interface SnapshotRequest {
  readonly tenantId: string;
  readonly principalId: string;
  readonly agentId: string;
  readonly runId: string;
  /** The run's user message: memories that match it come first, the rest fill by confidence and recency. */
  readonly query: string | null;
  readonly nowIso: string;
  readonly newId: () => string;
}

/**
 * Takes a session's snapshot (at its first run): recall the principal's memories (matching ones
 * first), scan each for injection at load, render the bounded, labelled section, and decide its
 * `memory.retrieved` trace, which rides with the build's model call start. Null (and no trace) when
 * the principal has nothing to remember.
 */
export async function takeSnapshot(
  opts: MemorySnapshotOptions,
  r: SnapshotRequest,
): Promise<{ section: MemorySection; events: NewEvent[] } | null> {
  const query = r.query && r.query.trim() !== '' ? r.query.slice(0, 2000) : null;
  const result = await opts.store.recall({
    tenantId: r.tenantId,
    principalId: r.principalId,
    agentId: r.agentId,
    query,
    limit: opts.items,
    includeTentative: false,
    requireMatch: false,
    nowIso: r.nowIso,
  });
  const rendered = renderMemorySection(result.items.map((i) => i.record));
  if (!rendered) return null;
  const shown = new Set(rendered.shown);
  const retrievalId = r.newId();
  const decided = memoryDecider.decide(
    {
      kind: 'RecordRetrieval',
      actor: WORKER,
      runId: r.runId,
      retrieval: {
        retrievalId,
        purpose: 'snapshot',
        query,
        invocationId: null,
        method: result.method,
        items: result.items
          .filter((i) => shown.has(i.record.id))
          .map((i, k) => ({ memoryId: i.record.id, score: i.score, rank: k + 1 })),
        blocked: rendered.blocked,
        rendered: rendered.text,
      },
    },
    memoryDecider.initialState(),
  );
  return { section: { retrievalId, text: rendered.text }, events: [...eventsOrThrow(decided)] };
}
