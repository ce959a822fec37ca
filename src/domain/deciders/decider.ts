import type { AgentError } from '../errors';
import type { EventType, NewEvent, StoredEvent } from '../events/payloads';

/**
 * What a decider answers a command with (emmett's decider shape, docs/adr/0024-deciders.md): the
 * events to append, in order, or a typed refusal that writes nothing. A refusal is one of the
 * `AgentError`s of `domain/errors.ts`, so the API's error envelope and status stay what they were.
 */
export type Decision<E extends NewEvent = NewEvent> =
  | { readonly kind: 'events'; readonly events: readonly E[] }
  | { readonly kind: 'refused'; readonly refusal: AgentError };

/**
 * A pure decider for one aggregate: `decide` never reads a clock, an id generator or the database
 * (time and ids arrive in the command), and `evolve` folds the aggregate's stored events into the
 * state `decide` needs. Given/When/Then tests drive both without a database.
 */
export interface Decider<Command, State, E extends NewEvent = NewEvent> {
  readonly initialState: () => State;
  readonly evolve: (state: State, event: StoredEvent) => State;
  readonly decide: (command: Command, state: State) => Decision<E>;
}

export function accept<E extends NewEvent>(...events: E[]): Decision<E> {
  return { kind: 'events', events };
}

export function refuse(refusal: AgentError): Decision<never> {
  return { kind: 'refused', refusal };
}

/** The events of a decision, or its refusal thrown: for callers that surface refusals as errors. */
export function eventsOrThrow<E extends NewEvent>(decision: Decision<E>): readonly E[] {
  if (decision.kind === 'refused') throw decision.refusal;
  return decision.events;
}

/** Folds stored events through a decider's `evolve`, from its initial state. */
export function foldState<C, S, E extends NewEvent>(decider: Decider<C, S, E>, events: readonly StoredEvent[]): S {
  return events.reduce((s, e) => decider.evolve(s, e), decider.initialState());
}

/** The one way a decider spells an event: type, run, actor and payload. */
export function event<T extends EventType>(
  type: T,
  data: NewEvent<T>['data'],
  header: Omit<NewEvent<T>, 'type' | 'data'> = {},
): NewEvent<T> {
  return { type, ...header, data };
}
