import type { ModelAttempt, ModelEvent, ModelFailedEvent } from '../../../domain/model/model-events';
import type { Clock } from '../../../ports/clock';

/**
 * Simulated latency for the offline providers. Waits go through the injected Clock and honour the
 * attempt's abort signal and absolute deadline, like a real adapter must; either one ends the
 * stream with a transient `timeout` failure, so the stream still ends with exactly one terminal event.
 */

export interface Pacing {
  readonly clock: Clock;
  readonly attempt: ModelAttempt;
  /** Total latency of one call, spread evenly before each event. */
  readonly latencyMs: number;
}

export type PauseOutcome = 'elapsed' | 'deadline' | 'aborted';

/** Waits `ms` (may be Infinity), cut short by the attempt's signal or deadline. */
export async function pause(clock: Clock, ms: number, attempt: ModelAttempt): Promise<PauseOutcome> {
  const { signal } = attempt;
  if (isAborted(signal)) return 'aborted';
  const remaining = attempt.deadlineMs === null ? Infinity : attempt.deadlineMs - clock.nowMs();
  if (remaining <= 0) return 'deadline';
  const wait = Math.min(ms, remaining);
  if (wait <= 0) return 'elapsed';
  try {
    // setTimeout treats Infinity as 1 ms, so an unbounded wait listens for the abort instead.
    if (Number.isFinite(wait)) await clock.sleep(wait, signal);
    else await untilAborted(signal);
  } catch (error) {
    if (isAborted(signal)) return 'aborted';
    throw error;
  }
  if (isAborted(signal)) return 'aborted';
  return wait < ms ? 'deadline' : 'elapsed';
}

/** Yields `events` spread across the latency; a timeout or abort replaces the rest with `failed`. */
export async function* paced(events: readonly ModelEvent[], pacing: Pacing): AsyncGenerator<ModelEvent> {
  const gap = events.length > 0 ? pacing.latencyMs / events.length : 0;
  for (const event of events) {
    const outcome = await pause(pacing.clock, gap, pacing.attempt);
    if (outcome !== 'elapsed') {
      yield timedOut(outcome);
      return;
    }
    yield event;
  }
}

/** Never answers: waits for the abort signal or deadline, then fails with a transient timeout. */
export async function* hang(pacing: Pacing): AsyncGenerator<ModelEvent> {
  const outcome = await pause(pacing.clock, Infinity, pacing.attempt);
  yield timedOut(outcome === 'elapsed' ? 'deadline' : outcome);
}

function timedOut(outcome: 'deadline' | 'aborted'): ModelFailedEvent {
  const why = outcome === 'deadline' ? 'the attempt deadline passed' : 'the attempt was aborted';
  return { type: 'failed', kind: 'transient', message: `timeout: ${why}`, providerCode: 'timeout' };
}

/** A function rather than inline checks: TypeScript would narrow `aborted` across the awaits. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });
}
