import type { EventType, StoredEvent } from '../../domain/events/payloads';
import type { Intervention } from './case-types';

/**
 * Decides when a case's interventions fire: each fires exactly once, on the `occurrence`-th event
 * of its type. Pure bookkeeping, so what "at_event" means is testable without a worker.
 */
export class InterventionTracker {
  private readonly seen = new Map<EventType, number>();
  private readonly fired = new Set<Intervention>();

  constructor(private readonly interventions: readonly Intervention[]) {}

  /** The interventions due now that `e` has been observed (events must be fed in order, once each). */
  observe(e: StoredEvent): Intervention[] {
    const n = (this.seen.get(e.type) ?? 0) + 1;
    this.seen.set(e.type, n);
    const due = this.interventions.filter((i) => !this.fired.has(i) && i.atEvent === e.type && i.occurrence === n);
    for (const i of due) this.fired.add(i);
    return due;
  }

  /** Interventions whose event never occurred: the case did not test what it says it tests. */
  unfired(): Intervention[] {
    return this.interventions.filter((i) => !this.fired.has(i));
  }
}

/** `crash_worker at model.response.completed #1`, for messages. */
export function describeIntervention(i: Intervention): string {
  return `${i.action} at ${i.atEvent} #${i.occurrence}`;
}
