import {
  ConcurrencyConflict,
  ConflictError,
  InvalidEventPayloadError,
  LeaseFencedError,
  NotFoundError,
} from '../errors';
import type { StoredEvent } from '../events/payloads';
import { RUN_ENDING_EVENTS } from '../run/status';
import { PROJECTIONS } from './index';
import type { Projection, Row } from './projection';
import { runProjection } from './run-projection';
import { sessionProjection } from './session-projection';

/**
 * What every event store does with a batch before it writes it (ADR 0026), whatever it stores it in:
 * the refusals an append decides from the rows it folds from, and the fold of the batch through
 * every inline projection. The PostgreSQL and in-memory stores share it, so they refuse and fold
 * alike (test/contract/).
 */

/** Projection rows by projection, then by key. */
export type ProjectionState = Map<Projection, Map<string, Row>>;

/** What an append is conditional on, besides the session existing for the tenant. */
export interface AppendConditions {
  readonly sessionId: string;
  readonly tenantId: string;
  /** The session's last sequence as the rows were read. */
  readonly lastSequence: number;
  readonly expectedSequence?: number;
  readonly fence?: { readonly runId: string; readonly leaseEpoch: number };
}

/** Event types that create their session: the batch's first event, on a session that does not exist yet. */
const CREATING_TYPES: ReadonlySet<string> = new Set(['session.created', 'session.forked']);

/**
 * The sequence the batch's events follow: the session's last one, or for a fork's first batch the
 * parent sequence its history ends at (issue 33): a fork's own stream continues the prefix it reads
 * through its parent, so the history it folds is one ordered log.
 */
export function sequenceBefore(first: StoredEvent, lastSequence: number): number {
  return lastSequence === 0 && first.type === 'session.forked' ? first.data.parentSequence : lastSequence;
}

/**
 * Throws the refusal the batch meets on `state`: the session exists (or, for `session.created`,
 * does not) for this tenant, is at the expected sequence, and the fenced run's lease epoch is the
 * writer's.
 */
export function refuseBatch(first: StoredEvent, state: ProjectionState, c: AppendConditions): void {
  const { sessionId } = c;
  const creating = CREATING_TYPES.has(first.type);
  const sessionRow = state.get(sessionProjection)?.get(sessionId);
  if (creating && sessionRow) throw new ConflictError(`session ${sessionId} already exists`, { sessionId });
  if (!creating && (!sessionRow || sessionRow.tenant_id !== c.tenantId))
    throw new NotFoundError(`session ${sessionId} does not exist`, { sessionId });
  if (c.expectedSequence !== undefined && c.expectedSequence !== c.lastSequence) {
    throw new ConcurrencyConflict(
      `session ${sessionId} is at sequence ${c.lastSequence}, expected ${c.expectedSequence}`,
      { sessionId, actual: c.lastSequence, expected: c.expectedSequence },
    );
  }
  if (c.fence) {
    const run = state.get(runProjection)?.get(c.fence.runId);
    const epoch = run ? Number(run.lease_epoch) : -1;
    if (epoch !== c.fence.leaseEpoch) {
      throw new LeaseFencedError(`run ${c.fence.runId} lease epoch is ${epoch}, writer holds ${c.fence.leaseEpoch}`, {
        runId: c.fence.runId,
        currentEpoch: epoch,
        writerEpoch: c.fence.leaseEpoch,
      });
    }
  }
}

/** The rows the batch changes, folded through every projection from the rows as they are now. */
export function foldBatch(stored: readonly StoredEvent[], state: ProjectionState): ProjectionState {
  const changed: ProjectionState = new Map();
  for (const ev of stored) {
    for (const proj of PROJECTIONS) {
      const key = proj.keyOf(ev);
      if (key === null) continue;
      const current = changed.get(proj)?.get(key) ?? state.get(proj)?.get(key);
      const next = proj.evolve(current, ev);
      if (next !== undefined && next !== current) {
        if (!changed.has(proj)) changed.set(proj, new Map());
        changed.get(proj)!.set(key, next);
      }
    }
  }
  if (CREATING_TYPES.has(stored[0].type) && !changed.get(sessionProjection)?.has(stored[0].sessionId)) {
    throw new InvalidEventPayloadError(`batch for session ${stored[0].sessionId} produced no session state`, {
      sessionId: stored[0].sessionId,
    });
  }
  return changed;
}

/** The keys of every keyed projection row the batch touches (the session's own row always). */
export function keysTouched(sessionId: string, drafts: readonly StoredEvent[]): Map<Projection, Set<string>> {
  const out = new Map<Projection, Set<string>>();
  for (const proj of PROJECTIONS) {
    if (proj.keyColumn === null) continue;
    const keys = new Set<string>();
    if (proj === sessionProjection) keys.add(sessionId);
    else
      for (const d of drafts) {
        const k = proj.keyOf(d);
        if (k !== null) keys.add(k);
      }
    if (keys.size > 0) out.set(proj, keys);
  }
  return out;
}

/**
 * What a committed batch means beyond its rows: the runs it names, the run it readies, the run it
 * ends, and a running run it asks to stop for a newer message (whose worker should hear of it now).
 */
export function batchFacts(stored: readonly StoredEvent[]): {
  readonly runIds: ReadonlySet<string>;
  readonly readyRunId: string | null;
  readonly endedRunId: string | null;
  readonly interruptedRunId: string | null;
} {
  const runIds = new Set<string>();
  for (const s of stored) if (s.runId !== null) runIds.add(s.runId);
  const ready = stored.find((s) => s.type === 'run.queued' || s.type === 'run.resumed' || s.type === 'run.released');
  const ending = stored.find((s) => s.runId !== null && RUN_ENDING_EVENTS.has(s.type));
  const interrupt = stored.find((s) => s.type === 'run.interrupt_requested');
  return {
    runIds,
    readyRunId: ready?.runId ?? null,
    endedRunId: ending?.runId ?? null,
    interruptedRunId: interrupt?.runId ?? null,
  };
}

/**
 * The run a committed batch nudges workers about (`run_ready`): the session's new active run when
 * the batch changed it (a run queued into an idle session, or the next of the session's queue once
 * the run ahead ended, issue 33); a running run asked to stop for a newer message (its worker stops
 * at its next safe point rather than at its next heartbeat); else a run the batch re-queued that is
 * not waiting in the session's queue. Null: nothing to nudge about.
 */
export function readyRunOf(
  facts: { readonly readyRunId: string | null; readonly interruptedRunId?: string | null },
  sessionBefore: Row | undefined,
  sessionAfter: Row | undefined,
): string | null {
  const activeAfter = (sessionAfter?.active_run_id as string | null | undefined) ?? null;
  if (sessionAfter && activeAfter !== null && activeAfter !== (sessionBefore?.active_run_id ?? null))
    return activeAfter;
  if (facts.interruptedRunId) return facts.interruptedRunId;
  const { readyRunId } = facts;
  if (readyRunId === null) return null;
  const waiting = ((sessionAfter ?? sessionBefore)?.queued_run_ids as string[] | null | undefined) ?? [];
  return waiting.includes(readyRunId) ? null : readyRunId;
}
