import { ValidationError } from '../errors';

/**
 * What a second message does while the session's run is still working (LangGraph's "double-texting"
 * strategies, issue 33, docs/adr/0038-conversation-control.md):
 * - `reject`: refused with 409 naming the active run (the server default, today's behaviour);
 * - `enqueue`: recorded, its run queued behind the session's others (FIFO), started when they end;
 * - `interrupt`: the active run is stopped at its next safe point and ends `interrupted`; the new
 *   run starts next, with the interrupted run's partial work in its history;
 * - `rollback`: like `interrupt`, but the stopped run's work after its user message is hidden from
 *   the context of later runs (`run.rolled_back` marks it; nothing is deleted from the log).
 */
export type MultitaskStrategy = 'reject' | 'enqueue' | 'interrupt' | 'rollback';

/** Every strategy this build implements; anything else is refused with a 400, never degraded. */
export const MULTITASK_STRATEGIES: readonly MultitaskStrategy[] = ['reject', 'enqueue', 'interrupt', 'rollback'];

/** The strategies that stop the active run (its mode, as `run.interrupt_requested` records it). */
export type InterruptMode = Extract<MultitaskStrategy, 'interrupt' | 'rollback'>;
export const INTERRUPT_MODES: readonly InterruptMode[] = ['interrupt', 'rollback'];

export function isInterruptMode(s: MultitaskStrategy): s is InterruptMode {
  return (INTERRUPT_MODES as readonly string[]).includes(s);
}

/** The strategy used when neither the request nor the agent names one. */
export const DEFAULT_MULTITASK_STRATEGY: MultitaskStrategy = 'reject';

export function isMultitaskStrategy(value: unknown): value is MultitaskStrategy {
  return typeof value === 'string' && (MULTITASK_STRATEGIES as readonly string[]).includes(value);
}

/** The strategy `value` names, or a ValidationError naming `field` and the strategies there are. */
export function parseMultitaskStrategy(value: unknown, field = 'multitask_strategy'): MultitaskStrategy {
  if (isMultitaskStrategy(value)) return value;
  throw new ValidationError(
    `${field} must be one of ${MULTITASK_STRATEGIES.join(', ')}; got ${JSON.stringify(value) ?? String(value)}`,
    { field, allowed: [...MULTITASK_STRATEGIES] },
  );
}
