import type { NewEvent, StoredEvent } from '../domain/events/payloads';
import type { CheckpointState } from '../domain/run/checkpoint';
import type { RunClaim, RunRecord } from '../domain/run/run';
import type { CheckpointWrite, RunJournal, RunWriteResult, SessionAppend } from '../ports/run-journal';
import { ConcurrencyConflict } from '../domain/errors';

/**
 * What a write is conditional on, besides its fence. A number: the session's last sequence is
 * exactly that. `'current'`: the run has no cancel request and the session nothing appended since
 * what this scope knows, judged when the write is sent (after any write in flight, so writes of the
 * scope never refuse each other): refused before any round trip (`CancelRequestedSince`) when the
 * run row the scope's last write returned has a cancel request, else conditional on the sequence
 * that write (or the claim) left — unconditional while the scope knows no sequence.
 */
export type WriteCondition = number | 'current';

/** A `'current'` write refused without a round trip: the run row this lease holds has a cancel request. */
export class CancelRequestedSince extends Error {
  constructor(readonly runId: string) {
    super(`run ${runId} has a cancel request`);
    this.name = 'CancelRequestedSince';
  }
}

/** The latest checkpoint of a run as the lease holder wrote it (or found it when the lease began). */
export interface KnownCheckpoint {
  readonly version: number;
  readonly state: CheckpointState;
}

/**
 * What the run loop holds for the life of one lease (docs/adr/0013-run-loop-round-trips.md).
 *
 * - **The run row and the latest checkpoint, without reading them back.** Under its lease epoch the
 *   loop is the run's only writer: every append it makes returns the run row as that append left
 *   it (`AppendResult.run`, exact because the append's session-sequence gate held), and only the
 *   lease holder writes checkpoints. Anything written by someone else in between (a cancel request,
 *   a take-over) advances the session sequence, so the next append re-reads fresh rows before it
 *   folds — a cancel request shows up in the returned row, and a take-over is refused with
 *   `LeaseFencedError` at write time, exactly as without this cache.
 * - **Deferred events.** Events that need no durable boundary before the next write (a tool call's
 *   proposal and authorization before it starts; a pure tool's result before the step's checkpoint)
 *   are queued and committed in order, in one fenced append, with the next write. Nothing external
 *   (a model call, a tool execution, a wait for a human) ever happens while events are queued:
 *   every such point is a `write`. A crash loses only queued events, which recovery re-derives
 *   exactly as if the crash had come before them.
 *
 * Writes are serialised (parallel read-only tool calls share one scope), so the log order is the
 * order in which events were handed over.
 */
export class LeaseScope {
  private queued: NewEvent[] = [];
  /** Checkpoints queued with `queued`, each after the queued event at `throughEvent`. */
  private queuedCheckpointList: { checkpoint: KnownCheckpoint; throughEvent: number }[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private current: RunRecord;
  private latest: KnownCheckpoint | null;
  private continuationMayExist: boolean;
  private toolInvocationsMayExist: boolean;
  /** Appends made (each one commit), for tests and metrics. */
  appends = 0;
  private lastSequence: number | null = null;

  constructor(
    private readonly journal: RunJournal,
    readonly claim: RunClaim,
    run: RunRecord,
    checkpoint: KnownCheckpoint | null,
    /** False when the claim found no tool invocation of the run (`ClaimPreload.hasToolInvocations`). */
    toolInvocationsAtStart = true,
    /** The session's last sequence as the claim read it (its session tail), if known. */
    private readonly claimedThrough: number | null = null,
    /** Sees the events of every write of this scope once committed, in commit order. */
    private readonly onAppended?: (events: readonly StoredEvent[]) => void,
  ) {
    this.current = run;
    this.latest = checkpoint;
    this.toolInvocationsMayExist = toolInvocationsAtStart;
    // Older checkpoints of a resumed run may hold a provider continuation this scope never saw.
    this.continuationMayExist = checkpoint !== null;
  }

  /**
   * The session's last sequence as of this scope's latest write (null before its first): every write
   * of the lease passes here, so the events up to it are exactly what `onAppended` was handed plus
   * what preceded the first write.
   */
  get appendedThrough(): number | null {
    return this.lastSequence;
  }

  /** The session's last sequence as this scope's latest write, or else the claim, left it (null if neither says). */
  get knownThrough(): number | null {
    return this.lastSequence ?? this.claimedThrough;
  }

  /** The run row as the last write (or the read that began the lease) left it. */
  get run(): RunRecord {
    return this.current;
  }

  /** The run's latest checkpoint (a queued one included: the next write commits it), or null. */
  get checkpoint(): KnownCheckpoint | null {
    return this.queuedCheckpointList.at(-1)?.checkpoint ?? this.latest;
  }

  /**
   * Whether the run may have tool invocations. False while the run had none at the claim and this
   * lease has queued or written no tool event: only the lease holder proposes tool calls, so until
   * then a lookup of the run's invocations would find none (the loop skips that read).
   */
  get mayHaveToolInvocations(): boolean {
    return this.toolInvocationsMayExist;
  }

  /**
   * The queued checkpoints the next write of `events` (with `checkpoint`, if any) saves too: those
   * its own or a later queued one does not supersede (`checkpointsOfBatch`), in version order.
   */
  queuedCheckpointsSavedWith(events: readonly NewEvent[], checkpoint?: KnownCheckpoint): KnownCheckpoint[] {
    return savedOf(this.queuedCheckpointList, [...this.queued, ...events], checkpoint)
      .map((q) => q.checkpoint)
      .filter((c) => c !== checkpoint);
  }

  get hasQueued(): boolean {
    return this.queued.length > 0;
  }

  /** The queued events, in the order the next write will commit them. */
  get queuedEvents(): readonly NewEvent[] {
    return this.queued;
  }

  /**
   * Queues events to be committed, in order, ahead of the next write's own events; with a
   * checkpoint, that checkpoint follows them (it is written in the same statement, before the next
   * write's own). Only when nothing external happens before that write: its persistence point is
   * then never observable on its own.
   */
  defer(events: readonly NewEvent[], checkpoint?: KnownCheckpoint): void {
    this.noteToolEvents(events);
    this.queued.push(...events);
    if (checkpoint) this.queuedCheckpointList.push({ checkpoint, throughEvent: this.queued.length - 1 });
  }

  private noteToolEvents(events: readonly NewEvent[]): void {
    if (!this.toolInvocationsMayExist && events.some((e) => e.type.startsWith('tool.')))
      this.toolInvocationsMayExist = true;
  }

  /**
   * Commits the queued events followed by `events` (and the optional checkpoint, which follows all
   * of them) in one fenced append, after any write already in flight. With nothing to write it
   * returns null without a round trip.
   *
   * With a `condition` (`WriteCondition`) the append may also be refused: `ConcurrencyConflict`
   * when the session's last sequence is not the one expected, `CancelRequestedSince` (no round trip)
   * for a `'current'` write once the run row has a cancel request. The queued events and
   * checkpoints are then queued again, ahead of anything queued since, so the next write still
   * commits them.
   */
  write(
    events: readonly NewEvent[],
    checkpoint?: KnownCheckpoint,
    condition?: WriteCondition,
    alongside?: readonly SessionAppend[],
  ): Promise<RunWriteResult | null> {
    const taken = this.queued.splice(0);
    const batch = [...taken, ...events];
    if (batch.length === 0) return Promise.resolve(null);
    const interim = this.queuedCheckpointList.splice(0);
    const written = savedOf(interim, batch, checkpoint);
    this.noteToolEvents(events);
    // Sent after the write in flight, whose result this scope has taken in by then: a `'current'`
    // condition is judged on it.
    const run = this.chain.then(async () => {
      let expectedSequence: number | undefined;
      if (condition === 'current') {
        if (this.current.cancelRequestedAt) throw new CancelRequestedSince(this.claim.runId);
        expectedSequence = this.knownThrough ?? undefined;
      } else expectedSequence = condition;
      const result = await this.journal.write(this.claim, batch, {
        ...(expectedSequence === undefined ? {} : { expectedSequence }),
        // A run-ending write clears the continuation earlier checkpoints hold (RunJournal), in the
        // same transaction; this scope knows when none can.
        continuationMayBeStored: this.continuationMayExist,
        ...(alongside ? { alongside } : {}),
        checkpoints: written.map((q) => checkpointWrite(q.checkpoint, q.throughEvent)),
      });
      this.appends += 1;
      this.lastSequence = result.lastSequence;
      this.onAppended?.(result.events);
      this.current = result.run;
      for (const { checkpoint: cp } of written) {
        this.latest = cp;
        if (cp.state.providerContinuation !== null) this.continuationMayExist = true;
      }
      return result;
    });
    this.chain = run.catch(() => undefined);
    return run.catch((e: unknown) => {
      if (e instanceof ConcurrencyConflict || e instanceof CancelRequestedSince) this.requeue(taken, interim);
      throw e;
    });
  }

  /** Puts the events and checkpoints of a refused write back at the head of the queue. */
  private requeue(events: NewEvent[], interim: { checkpoint: KnownCheckpoint; throughEvent: number }[]): void {
    this.queuedCheckpointList = [
      ...interim,
      ...this.queuedCheckpointList.map((q) => ({ ...q, throughEvent: q.throughEvent + events.length })),
    ];
    this.queued = [...events, ...this.queued];
  }
}

/**
 * The checkpoints a batch writes (ADR 0057): its last one, which supersedes every earlier one of the
 * batch (they commit together, so none of them could ever be a run's latest), and any earlier one a
 * `run.checkpointed` of the batch names, so that an event never names a version that does not exist.
 * The journal's policy leaves no named one before the last, so a commit writes at most one. A version
 * left out is never reused: the versions, and the events naming them, are those the run had before.
 */
export function checkpointsOfBatch<T extends { readonly checkpoint: KnownCheckpoint }>(
  checkpoints: readonly T[],
  batch: readonly NewEvent[],
): T[] {
  if (checkpoints.length <= 1) return [...checkpoints];
  const named = new Set<number>();
  for (const e of batch)
    if (e.type === 'run.checkpointed') named.add((e as NewEvent<'run.checkpointed'>).data.checkpointVersion);
  const last = checkpoints.length - 1;
  return checkpoints.filter((q, i) => i === last || named.has(q.checkpoint.version));
}

/** The checkpoints a write of `batch` saves: of those queued (`interim`) and its own, which follows the batch. */
function savedOf(
  interim: readonly { checkpoint: KnownCheckpoint; throughEvent: number }[],
  batch: readonly NewEvent[],
  checkpoint: KnownCheckpoint | undefined,
): { checkpoint: KnownCheckpoint; throughEvent: number }[] {
  return checkpointsOfBatch(
    [...interim, ...(checkpoint ? [{ checkpoint, throughEvent: batch.length - 1 }] : [])],
    batch,
  );
}

/** A checkpoint as the run journal writes it: after the batch's event at `throughEvent`. */
function checkpointWrite(checkpoint: KnownCheckpoint, throughEvent: number): CheckpointWrite {
  return { version: checkpoint.version, state: checkpoint.state as unknown as Record<string, unknown>, throughEvent };
}
