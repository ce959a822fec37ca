import type { StoredEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';

/** Where the context engine reads a session log from (the event store's `listAfter`). */
export interface HistorySource {
  listAfter(sessionId: string, sequence: number, principal: Principal, limit?: number): Promise<StoredEvent[]>;
}
