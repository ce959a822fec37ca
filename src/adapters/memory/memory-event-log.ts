import type { NewEvent, StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import {
  batchFacts,
  foldBatch,
  keysTouched,
  refuseBatch,
  sequenceBefore,
  type ProjectionState,
} from '../../domain/projections/append-batch';
import type { Row } from '../../domain/projections';
import { runProjection } from '../../domain/projections/run-projection';
import type { CheckpointState, StoredCheckpoint } from '../../domain/run/checkpoint';
import { ConcurrencyConflict, InvalidEventPayloadError } from '../../domain/errors';
import type { Clock } from '../../ports/clock';
import type { GlobalPosition } from '../../ports/event-store';
import type { CheckpointWrite } from '../../ports/run-journal';
import { draftEvents } from '../event-validation';
import { toStorableText } from '../../domain/events/storable-text';

/** One append to the in-memory log: the batch and what it is conditional on. */
export interface MemoryAppend {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly events: readonly NewEvent[];
  readonly expectedSequence?: number;
  readonly fence?: { readonly runId: string; readonly leaseEpoch: number };
  readonly checkpoints?: readonly CheckpointWrite[];
  readonly continuationMayBeStored?: boolean;
}

interface StoredRow {
  readonly event: StoredEvent;
  /** The append (transaction) that wrote it: the global log's first ordering key. */
  readonly transaction: number;
}

/**
 * The event log, its inline projections and the runs' checkpoints in memory (plan Milestone 1;
 * ADR 0026): the same refusals and fold as the PostgreSQL store (domain/projections/append-batch.ts),
 * each append atomic (nothing is awaited while it is decided and applied). For fast tests of what
 * sits on the ports, and the contract suite (test/contract/). One process, no notifications, no
 * durability.
 */
export class MemoryEventLog {
  private readonly log: StoredRow[] = [];
  private readonly sessions = new Map<string, StoredEvent[]>();
  private readonly rows: ProjectionState = new Map();
  private readonly checkpoints = new Map<string, StoredCheckpoint[]>();
  private transactions = 0;

  constructor(private readonly clock: Clock) {}

  append(req: MemoryAppend): { events: StoredEvent[]; lastSequence: number; runRow?: Row } {
    if (req.events.length === 0)
      throw new InvalidEventPayloadError('append needs at least one event', { sessionId: req.sessionId });
    const drafts = draftEvents(req, this.clock.nowIso(), null);
    const own = this.sessions.get(req.sessionId) ?? [];
    const last = sequenceBefore(drafts[0], own.at(-1)?.sequence ?? 0);
    refuseBatch(drafts[0], this.rowsFor(req.sessionId, drafts), { ...req, lastSequence: last });
    const stored = drafts.map((d, i) => ({ ...d, id: this.log.length + i + 1, sequence: last + i + 1 }));
    const cps = this.checkpointsOf(req, stored);
    const changed = foldBatch(stored, this.rows);
    // Decided: from here on nothing can refuse the batch, so it is applied whole.
    const transaction = ++this.transactions;
    for (const event of stored) this.log.push({ event: copyOf(event), transaction });
    this.sessions.set(req.sessionId, [...own, ...stored.map(copyOf)]);
    for (const [proj, rows] of changed) {
      if (!this.rows.has(proj)) this.rows.set(proj, new Map());
      for (const [key, row] of rows) this.rows.get(proj)!.set(key, row);
    }
    const ended = req.continuationMayBeStored === false ? null : batchFacts(stored).endedRunId;
    if (ended) this.clearContinuations(ended);
    for (const c of cps) this.checkpoints.set(c.runId, [...(this.checkpoints.get(c.runId) ?? []), c]);
    const runRow = req.fence ? this.rows.get(runProjection)?.get(req.fence.runId) : undefined;
    return { events: stored, lastSequence: last + stored.length, runRow };
  }

  listAfter(sessionId: string, sequence: number, principal: Principal, limit: number): StoredEvent[] {
    return (this.sessions.get(sessionId) ?? [])
      .filter((e) => e.sequence > sequence && e.tenantId === principal.tenantId)
      .slice(0, limit)
      .map(copyOf);
  }

  listRunEvents(runId: string, principal: Principal, afterSequence: number): StoredEvent[] {
    return this.log
      .filter(({ event: e }) => e.runId === runId && e.tenantId === principal.tenantId && e.sequence > afterSequence)
      .map(({ event }) => copyOf(event));
  }

  readGlobal(after: GlobalPosition | null, limit: number): { events: StoredEvent[]; position: GlobalPosition | null } {
    const from = after ? { transaction: Number(after.transactionId), id: after.eventId } : { transaction: 0, id: 0 };
    const page = this.log
      .filter((r) => r.transaction > from.transaction || (r.transaction === from.transaction && r.event.id > from.id))
      .slice(0, limit);
    const lastRow = page.at(-1);
    return {
      events: page.map((r) => copyOf(r.event)),
      position: lastRow ? { transactionId: String(lastRow.transaction), eventId: lastRow.event.id } : after,
    };
  }

  latestCheckpoint(runId: string): StoredCheckpoint | null {
    const latest = this.checkpoints.get(runId)?.at(-1);
    return latest ? copyOf(latest) : null;
  }

  /** The rows the batch touches, as they are now. */
  private rowsFor(sessionId: string, drafts: readonly StoredEvent[]): ProjectionState {
    const state: ProjectionState = new Map();
    for (const [proj, keys] of keysTouched(sessionId, drafts)) {
      const rows = new Map<string, Row>();
      for (const key of keys) {
        const row = this.rows.get(proj)?.get(key);
        if (row) rows.set(key, row);
      }
      state.set(proj, rows);
    }
    return state;
  }

  /** The batch's checkpoints as stored; a version the run already has refuses the batch. */
  private checkpointsOf(req: MemoryAppend, stored: readonly StoredEvent[]): StoredCheckpoint[] {
    const runId = req.fence?.runId;
    if (!runId || !req.checkpoints) return [];
    const ends = batchFacts(stored).endedRunId !== null;
    const taken = new Set((this.checkpoints.get(runId) ?? []).map((c) => c.version));
    return req.checkpoints.map((c) => {
      if (taken.has(c.version))
        throw new ConcurrencyConflict('checkpoint version already written', { sessionId: req.sessionId });
      // A batch that ends the run leaves no checkpoint of it with a provider continuation.
      const state = (ends && 'providerContinuation' in c.state
        ? { ...c.state, providerContinuation: null }
        : c.state) as unknown as CheckpointState;
      const text = JSON.stringify(toStorableText(state).value);
      return {
        runId,
        version: c.version,
        state: JSON.parse(text) as CheckpointState,
        lastEventSequence: stored[c.throughEvent].sequence,
        sizeBytes: Buffer.byteLength(text),
      };
    });
  }

  private clearContinuations(runId: string): void {
    const cps = this.checkpoints.get(runId);
    if (!cps) return;
    this.checkpoints.set(
      runId,
      cps.map((c) => {
        const held = (c.state as { providerContinuation?: unknown }).providerContinuation;
        if (held === null || typeof held !== 'object') return c;
        const state = { ...c.state, providerContinuation: null };
        return { ...c, state, sizeBytes: Buffer.byteLength(JSON.stringify(state)) };
      }),
    );
  }
}

/** A stored value is never shared with a caller: each gets its own copy, as from a database. */
function copyOf<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
