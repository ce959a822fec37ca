/**
 * The in-memory adapter's public module (docs/adr/0026-event-store-and-run-journal.md): the event
 * store, run journal and checkpoint store ports over one in-memory log, for tests and tools that
 * need no database.
 */
import type { Clock } from '../../ports/clock';
import { MemoryEventLog } from './memory-event-log';
import { MemoryCheckpointStore, MemoryEventStore, MemoryRunJournal } from './memory-stores';

export { MemoryEventLog, MemoryCheckpointStore, MemoryEventStore, MemoryRunJournal };

/** The three ports over one fresh in-memory log. */
export function createMemoryStores(clock: Clock): {
  readonly store: MemoryEventStore;
  readonly journal: MemoryRunJournal;
  readonly checkpoints: MemoryCheckpointStore;
} {
  const log = new MemoryEventLog(clock);
  return {
    store: new MemoryEventStore(log),
    journal: new MemoryRunJournal(log),
    checkpoints: new MemoryCheckpointStore(log),
  };
}
