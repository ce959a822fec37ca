import type { NewEvent, StoredEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';

export interface AppendOptions {
  /** Tenant that owns the session; every event row carries it. */
  readonly tenantId: string;
  /** Refuse (ConcurrencyConflict) unless the session's last sequence is exactly this. */
  readonly expectedSequence?: number;
}

export interface AppendResult {
  /** The events as appended: ids and sequences assigned, everything else as handed in. */
  readonly events: readonly StoredEvent[];
  readonly lastSequence: number;
}

/** A position in the global log: (transaction id, event id), ordered lexicographically. */
export interface GlobalPosition {
  readonly transactionId: string;
  readonly eventId: number;
}

/**
 * The append-only, versioned event log (docs/events.md, ADR 0004, ADR 0026). `append` allocates the
 * per-session sequence, validates, inserts, applies inline projections and notifies - atomically.
 * Run-specific writes (the lease fence, checkpoints) go through the run journal (run-journal.ts).
 */
export interface EventStore {
  append(sessionId: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult>;
  /** Events of one session after `sequence`, oldest first; only for the session's own tenant. */
  listAfter(sessionId: string, sequence: number, principal: Principal, limit?: number): Promise<StoredEvent[]>;
  /** Events of one run, oldest first; only for the run's own tenant. */
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
