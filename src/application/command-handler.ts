import type { Decision } from '../domain/deciders/decider';
import { ConcurrencyConflict, type AgentError } from '../domain/errors';
import type { NewEvent } from '../domain/events/payloads';
import type { EventStore } from '../ports/event-store';

/** A command's stream and the decider state read from it. */
export interface LoadedState<S> {
  /** The session whose log the decision is appended to. */
  readonly sessionId: string;
  readonly tenantId: string;
  readonly state: S;
  /**
   * The session's last sequence, read BEFORE the state the decision rests on: the read models change
   * in the same transaction as the sequence, so anything committed after this read makes the
   * conditional append fail (and the command retry) instead of being overwritten. Absent: the
   * append is unconditional (a new stream, or a write the database's own constraints guard).
   */
  readonly expectedSequence?: number;
}

export interface CommandSpec<S, R> {
  /** Reads the stream's state (and may refuse what it cannot find: NotFoundError). */
  load(): Promise<LoadedState<S>>;
  /** Asks the deciders; a refusal is thrown as is and nothing is written. */
  decide(state: S): Decision;
  /** The command's answer, from what was loaded and what was appended (nothing: a no-op decision). */
  result(loaded: LoadedState<S>, appended: readonly NewEvent[]): R;
  /** The error once every attempt lost its race to a concurrent writer. */
  exhausted(): AgentError;
}

/** How many times a command is tried when a concurrent append moved the stream under it. */
export const COMMAND_ATTEMPTS = 10;

/**
 * The one way an application command writes (emmett's command handler): load the stream's state,
 * decide, append what was decided conditional on the sequence read, and on a ConcurrencyConflict —
 * only that — do all of it again, a bounded number of times. A decision of no events appends nothing.
 */
export async function handleCommand<S, R>(store: EventStore, spec: CommandSpec<S, R>): Promise<R> {
  for (let attempt = 0; attempt < COMMAND_ATTEMPTS; attempt++) {
    const loaded = await spec.load();
    const decision = spec.decide(loaded.state);
    if (decision.kind === 'refused') throw decision.refusal;
    if (decision.events.length === 0) return spec.result(loaded, []);
    try {
      await store.append(loaded.sessionId, decision.events, {
        tenantId: loaded.tenantId,
        ...(loaded.expectedSequence === undefined ? {} : { expectedSequence: loaded.expectedSequence }),
      });
      return spec.result(loaded, decision.events);
    } catch (e) {
      if (!(e instanceof ConcurrencyConflict)) throw e;
    }
  }
  throw spec.exhausted();
}
