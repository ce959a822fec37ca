import type { Decider, Decision } from '../../src/domain/deciders/decider';
import type { AgentError } from '../../src/domain/errors';
import type { EventType, NewEvent, StoredEvent } from '../../src/domain/events/payloads';

/**
 * Given/When/Then for deciders (emmett's DeciderSpecification): given these stored events, when this
 * command, then these events — or this refusal. No database, no clock.
 */
export function deciderSpec<C, S, E extends NewEvent>(decider: Decider<C, S, E>) {
  return {
    given(history: readonly StoredEvent[] = []) {
      const state = history.reduce((s, e) => decider.evolve(s, e), decider.initialState());
      return {
        state,
        when(command: C) {
          const decision: Decision<E> = decider.decide(command, state);
          return {
            decision,
            then(expected: readonly NewEvent[]): void {
              if (decision.kind === 'refused') {
                throw new Error(`expected events, got refusal ${decision.refusal.code}: ${decision.refusal.message}`);
              }
              expect(decision.events).toEqual(expected);
            },
            thenRefuses(code: AgentError['code'], message?: RegExp): void {
              if (decision.kind !== 'refused') {
                throw new Error(
                  `expected refusal ${code}, got events ${decision.events.map((e) => e.type).join(', ')}`,
                );
              }
              expect(decision.refusal.code).toBe(code);
              if (message) expect(decision.refusal.message).toMatch(message);
            },
          };
        },
      };
    },
  };
}

let nextId = 1;
/** A stored event for a Given: sequence and id are counted; the rest has test defaults. */
export function stored<T extends EventType>(e: NewEvent<T>, over: Partial<StoredEvent> = {}): StoredEvent {
  const id = nextId++;
  return {
    id,
    sessionId: '00000000-0000-4000-8000-000000000001',
    runId: e.runId ?? null,
    sequence: id,
    type: e.type,
    schemaVersion: 1,
    data: e.data,
    actorType: e.actorType ?? 'system',
    actorId: e.actorId ?? null,
    tenantId: 'default',
    traceId: e.traceId ?? null,
    createdAt: '2026-01-01T00:00:00.000Z',
    ...over,
  } as StoredEvent;
}
