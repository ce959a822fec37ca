import type { NewEvent, StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import { toRunRecord } from '../../domain/projections/run-record';
import type { StoredCheckpoint } from '../../domain/run/checkpoint';
import type { AppendOptions, AppendResult, EventStore, GlobalPosition } from '../../ports/event-store';
import type { RunJournal, RunLease, RunWriteOptions, RunWriteResult } from '../../ports/run-journal';
import type { CheckpointStore } from '../../ports/run-store';
import type { MemoryEventLog } from './memory-event-log';

/** The event store port over the in-memory log. */
export class MemoryEventStore implements EventStore {
  constructor(private readonly log: MemoryEventLog) {}

  async append(sessionId: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    const { events: stored, lastSequence } = this.log.append({ sessionId, events, ...options });
    return { events: stored, lastSequence };
  }

  async listAfter(sessionId: string, sequence: number, principal: Principal, limit = 1000): Promise<StoredEvent[]> {
    return this.log.listAfter(sessionId, sequence, principal, limit);
  }

  async listRunEvents(runId: string, principal: Principal, afterSequence = 0): Promise<StoredEvent[]> {
    return this.log.listRunEvents(runId, principal, afterSequence);
  }

  async readGlobal(
    after: GlobalPosition | null,
    limit: number,
  ): Promise<{ events: StoredEvent[]; position: GlobalPosition | null }> {
    return this.log.readGlobal(after, limit);
  }
}

/** The run journal port over the in-memory log: fenced appends with their checkpoints. */
export class MemoryRunJournal implements RunJournal {
  constructor(private readonly log: MemoryEventLog) {}

  async write(lease: RunLease, events: readonly NewEvent[], options: RunWriteOptions = {}): Promise<RunWriteResult> {
    const { alongside, ...rest } = options;
    const done = this.log.append({
      sessionId: lease.sessionId,
      tenantId: lease.tenantId,
      events,
      fence: { runId: lease.runId, leaseEpoch: lease.leaseEpoch },
      ...rest,
    });
    // The run's append decided first (fence, condition); the others are new sessions' first events,
    // which nothing can refuse but an id collision. Nothing is awaited in between.
    for (const a of alongside ?? []) this.log.append(a);
    return { events: done.events, lastSequence: done.lastSequence, run: toRunRecord(done.runRow!) };
  }
}

/** The checkpoint store port over the in-memory log. */
export class MemoryCheckpointStore implements CheckpointStore {
  constructor(private readonly log: MemoryEventLog) {}

  async latest(runId: string): Promise<StoredCheckpoint | null> {
    return this.log.latestCheckpoint(runId);
  }
}
