import type { NewEvent, StoredEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import type { RunRecord } from '../domain/run/run';

/** A checkpoint written atomically with the events it follows (its `last_event_sequence`). */
export interface CheckpointWrite {
  readonly runId: string;
  readonly version: number;
  readonly state: Record<string, unknown>;
}

export interface AppendOptions {
  /** Tenant that owns the session; every event row carries it. */
  readonly tenantId: string;
  /** Refuse (ConcurrencyConflict) unless the session's last sequence is exactly this. */
  readonly expectedSequence?: number;
  /** Refuse (LeaseFencedError) unless the run's current lease epoch is exactly this. */
  readonly fence?: { readonly runId: string; readonly leaseEpoch: number };
  readonly checkpoint?: CheckpointWrite;
  /**
   * Checkpoints of earlier persistence points of the batch, written in the same statement before
   * `checkpoint`: each follows the event at index `throughEvent` of the batch (its
   * `last_event_sequence`). A lease holder's queued checkpoint (a model response whose tool calls
   * are pure computations is committed with their results).
   */
  readonly interimCheckpoints?: readonly (CheckpointWrite & { readonly throughEvent: number })[];
  /**
   * A batch that ends a run (`run.completed`, `run.failed`, `run.cancelled`) also clears the
   * provider-opaque continuation (plan §10.6) from that run's stored checkpoints, in the same
   * transaction, so a finished run is never observable with one. `false` says the caller knows no
   * checkpoint of the run holds one (the lease holder tracks it), which skips that clearing.
   */
  readonly continuationMayBeStored?: boolean;
}

export interface AppendResult {
  readonly events: readonly StoredEvent[];
  readonly lastSequence: number;
  /**
   * With a `fence`: the fenced run's read-model row exactly as this append left it (its projection
   * columns are what the statement wrote or found current at the commit; the operational
   * `leaseExpiresAt` is as last read). Lets the lease holder track its run without reading it back.
   */
  readonly run?: RunRecord;
}

/** A position in the global log: (transaction id, event id), ordered lexicographically. */
export interface GlobalPosition {
  readonly transactionId: string;
  readonly eventId: number;
}

/**
 * The append-only, versioned event log (docs/events.md, ADR 0004). `append` allocates the per-session
 * sequence, validates, inserts, applies inline projections and notifies — atomically.
 */
export interface EventStore {
  append(sessionId: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult>;
  /** Events of one session after `sequence`, oldest first; only for the session's own tenant. */
  listAfter(sessionId: string, sequence: number, principal: Principal, limit?: number): Promise<StoredEvent[]>;
  /**
   * The events of an append's result exactly as `listAfter` returns them (payloads in the shape the
   * log stores them: the same members, key order and numbers), so the writer can use its own events
   * in place of reading them back (the context engine does, ADR 0013).
   */
  asRead(events: readonly StoredEvent[]): StoredEvent[];
  /**
   * Events not appended yet, as `listAfter` will return them once this session commits them (id and
   * sequence 0): for a build that must see what the writer's next append will commit.
   */
  asPending(sessionId: string, tenantId: string, events: readonly NewEvent[]): StoredEvent[];
  /** Events of one run, oldest first. */
  listRunEvents(runId: string, principal: Principal, afterSequence?: number): Promise<StoredEvent[]>;
  /**
   * The global log for asynchronous consumers: only events whose transaction is below the oldest
   * still-running transaction, so a late commit is never skipped.
   */
  readGlobal(
    after: GlobalPosition | null,
    limit: number,
  ): Promise<{ events: StoredEvent[]; position: GlobalPosition | null }>;
}
