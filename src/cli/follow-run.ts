import type { StoredEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import type { Platform } from '../composition/platform';
import { RUN_ENDING_EVENTS } from '../domain/run/status';

// Every ending, `run.interrupted` included (a newer message stopped the run, ADR 0038).
const TERMINAL = RUN_ENDING_EVENTS;

/** Where an event came from: the run followed, or its child run number `child` (1-based brief order). */
export interface EventOrigin {
  readonly child: number | null;
}

/**
 * Streams a run's persisted events in sequence order as they are committed: LISTEN first, then
 * read from the log after the last sequence seen, so nothing is missed or repeated. The child runs
 * a `delegate.run` of the run starts (`run.waiting_for_children`) are followed too, each in its own
 * session, until they end. Resolves with the run's terminal event, or null when `timeoutMs` passes.
 */
export async function followRun(
  platform: Platform,
  runId: string,
  principal: Principal,
  onEvent: (e: StoredEvent, origin: EventOrigin) => void,
  timeoutMs: number,
): Promise<StoredEvent | null> {
  let wake: (() => void) | null = null;
  const listener = platform.listen('agent_events');
  await listener.start(() => wake?.());
  const deadline = Date.now() + timeoutMs;
  let after = 0;
  // Children still followed: their number and the last sequence of theirs shown.
  const children = new Map<string, { child: number; after: number }>();
  let numbered = 0;
  try {
    for (;;) {
      const events = await platform.store.listRunEvents(runId, principal, after);
      for (const e of events) {
        after = e.sequence;
        onEvent(e, { child: null });
        if (e.type === 'run.waiting_for_children')
          for (const c of e.data.children) children.set(c.runId, { child: ++numbered, after: 0 });
        if (TERMINAL.has(e.type)) return e;
      }
      for (const [childId, c] of children) {
        for (const e of await platform.store.listRunEvents(childId, principal, c.after)) {
          c.after = e.sequence;
          onEvent(e, { child: c.child });
          if (TERMINAL.has(e.type)) children.delete(childId);
        }
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) return null;
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, Math.min(500, remaining));
      });
      wake = null;
    }
  } finally {
    await listener.stop();
  }
}
