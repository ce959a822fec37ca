import type { NewEvent } from '../domain/events/payloads';
import type { RunRecord } from '../domain/run/run';
import type { AppendResult } from './event-store';

/** The lease a write is fenced by: the run's session, tenant, and the epoch its `run.claimed` carried. */
export interface RunLease {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly runId: string;
  readonly leaseEpoch: number;
}

/** A checkpoint of the run written atomically with the events it follows. */
export interface CheckpointWrite {
  readonly version: number;
  readonly state: Record<string, unknown>;
  /** Index in the batch of the event it follows: its `last_event_sequence` is that event's sequence. */
  readonly throughEvent: number;
}

export interface RunWriteOptions {
  /** Refuse (ConcurrencyConflict) unless the session's last sequence is exactly this. */
  readonly expectedSequence?: number;
  /** The batch's checkpoints, in version order (a lease holder's queued ones, then the write's own). */
  readonly checkpoints?: readonly CheckpointWrite[];
  /**
   * A batch that ends the run (`run.completed`, `run.failed`, `run.cancelled`) also clears the
   * provider-opaque continuation (plan §10.6) from the run's stored checkpoints, in the same
   * transaction, so a finished run is never observable with one. `false` says the writer knows no
   * checkpoint of the run holds one (the lease holder tracks it), which skips that clearing.
   */
  readonly continuationMayBeStored?: boolean;
  /**
   * Other sessions' appends committed in the same transaction, before this one (a `delegate.run`'s
   * child sessions, ADR 0037): all of them or none, and only if the fence and condition hold.
   */
  readonly alongside?: readonly SessionAppend[];
}

/** An append to another session written with a run's write (each a new session's first events). */
export interface SessionAppend {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly events: readonly NewEvent[];
}

export interface RunWriteResult extends AppendResult {
  /**
   * The fenced run's read-model row exactly as this write left it (its projection columns as the
   * write committed them; the operational `leaseExpiresAt` as last read). Lets the lease holder
   * track its run without reading it back.
   */
  readonly run: RunRecord;
}

/**
 * The run's journal in the log (ADR 0026): the lease holder's writes. Each is one append of the
 * event store's (same sequence gate, projections and notification), refused with LeaseFencedError
 * unless the run's lease epoch is still the writer's, with the run's checkpoints in the same
 * transaction.
 */
export interface RunJournal {
  write(lease: RunLease, events: readonly NewEvent[], options?: RunWriteOptions): Promise<RunWriteResult>;
}
