import type { MemorySettings } from '../config/memory-settings';
import type { Database } from '../adapters/postgres/database';
import { PgFormationLedger } from '../adapters/postgres/memory-records/pg-formation-ledger';
import type { Clock, IdFactory } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import type { Logger } from '../ports/logger';
import type { MemoryStore } from '../ports/memory-records';
import { MemoryFormationTask } from '../runtime/memory-formation';
import type { ModelRouter } from '../runtime/model-router';

/**
 * End-of-run memory formation (MEMORY_FORMATION, ADR 0043) as a worker's housekeeping task, or
 * null when it is off. Model-assisted formation routes MEMORY_FORMATION_MODEL_POLICY (checked at
 * startup) or else the run's own model policy.
 */
export function createFormationTask(d: {
  memory: MemorySettings;
  db: Database;
  memories: MemoryStore;
  events: Pick<EventStore, 'listRunEvents'>;
  router: Pick<ModelRouter, 'resolve'>;
  clock: Clock;
  ids: IdFactory;
  log: Logger;
}): MemoryFormationTask | null {
  const { memory, router } = d;
  if (memory.formation === 'off') return null;
  const fixed = memory.formationModelPolicy;
  // Fail at startup on a policy that cannot be routed, not at the first formation.
  if (memory.formation === 'model' && fixed) router.resolve(fixed);
  return new MemoryFormationTask({
    mode: memory.formation,
    ledger: new PgFormationLedger(d.db),
    memories: d.memories,
    events: d.events,
    clock: d.clock,
    ids: d.ids,
    log: d.log,
    routeFor: (runPolicy) => router.resolve(fixed ?? runPolicy),
  });
}
