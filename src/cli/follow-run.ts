import type { StoredEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import type { Platform } from '../composition/platform';

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * Streams a run's persisted events in sequence order as they are committed: LISTEN first, then
 * read from the log after the last sequence seen, so nothing is missed or repeated. Resolves with
 * the terminal event, or null when `timeoutMs` passes first.
 */
export async function followRun(
  platform: Platform,
  runId: string,
  principal: Principal,
  onEvent: (e: StoredEvent) => void,
  timeoutMs: number,
): Promise<StoredEvent | null> {
  let wake: (() => void) | null = null;
  const listener = platform.listen('agent_events');
  await listener.start(() => wake?.());
  const deadline = Date.now() + timeoutMs;
  let after = 0;
  try {
    for (;;) {
      const events = await platform.store.listRunEvents(runId, principal, after);
      for (const e of events) {
        after = e.sequence;
        onEvent(e);
        if (TERMINAL.has(e.type)) return e;
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
