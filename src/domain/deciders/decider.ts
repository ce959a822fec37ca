import type { AgentError } from '../errors';
import type { EventPayloads, EventType, NewEvent, StoredEvent } from '../events/payloads';

/**
 * What `evolve` reads of an event: its type, payload and run. Both a stored event and a decided one
 * (`NewEvent`, before the store numbered it) are one, so a worker can fold what it just decided
 * into its state without reading it back.
 */
export type DecidedEvent = {
  [K in EventType]: { readonly type: K; readonly data: EventPayloads[K]; readonly runId?: string | null };
}[EventType];

/** Who a command is issued by: the actor header every event it decides carries. */
export interface Actor {
  readonly actorType: NonNullable<NewEvent['actorType']>;
  readonly actorId?: string | null;
}

/** The run loop's actor: a worker holding the run's lease (no actor id, as the loop has always written). */
export const WORKER: Actor = { actorType: 'worker' };

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
  readonly evolve: (state: State, event: DecidedEvent) => State;
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

/** The state after `events` (stored or just decided) on top of `state`. */
export function evolveAll<C, S, E extends NewEvent>(
  decider: Decider<C, S, E>,
  state: S,
  events: readonly (StoredEvent | NewEvent)[],
): S {
  return events.reduce((s, e) => decider.evolve(s, e as DecidedEvent), state);
}

/**
 * Several deciders' answers to one command, in order: their events concatenated, or the first
 * refusal (then nothing is written). How a process that spans aggregates (a cancel that reaps the
 * run's approvals) stays one decision.
 */
export function combine(...decisions: readonly Decision[]): Decision {
  const events: NewEvent[] = [];
  for (const d of decisions) {
    if (d.kind === 'refused') return d;
    events.push(...d.events);
  }
  return { kind: 'events', events };
}

/** The one way a decider spells an event: type, run, actor and payload. */
export function event<T extends EventType>(
  type: T,
  data: NewEvent<T>['data'],
  header: Omit<NewEvent<T>, 'type' | 'data'> = {},
): NewEvent<T> {
  return { type, ...header, data };
}
