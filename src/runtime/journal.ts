import { ConcurrencyConflict } from '../domain/errors';
import type { NewEvent, StoredEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import type { CheckpointState, ContextCheckpointRef } from '../domain/run/checkpoint';
import type { RunClaim, RunRecord } from '../domain/run/run';
import type { Clock } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import type { RunJournal, RunWriteResult, SessionAppend } from '../ports/run-journal';
import { usageAfterResponse } from '../domain/run/usage-after-response';
import { CancelRequestedSince, type KnownCheckpoint, type LeaseScope } from './lease-scope';
import { runStateOf, type RunState } from '../domain/deciders/run';
import { decideRun } from './steps/events';
import { withTraceId, type RunTelemetry } from './tracing';

/** Sees the events of each commit of a run loop before the loop goes on (`RunLoopDeps.onCommitted`). */
export type CommitObserver = (events: readonly StoredEvent[]) => void | Promise<void>;

export interface JournalDeps {
  /** Reads what others appended since (a refused conditional write). */
  readonly store: EventStore;
  /** Where every write of the loop goes: fenced by the claim's lease epoch. */
  readonly journal: RunJournal;
  readonly telemetry: RunTelemetry;
  readonly clock: Clock;
  readonly onCommitted?: CommitObserver;
}

/** What a model response's record needs to know to choose its commit (ADR 0013, ADR 0025). */
export interface ResponseFacts {
  /** The response proposes tool calls (or malformed ones): the tool loop goes on. */
  readonly continues: boolean;
  /** Every proposed call is a pure computation (`isPureComputation`) and none is malformed. */
  readonly pureOnly: boolean;
  /** The worker's stop signal has fired. */
  readonly stopping: boolean;
}

/** Why a conditional write was not made: a cancel request was seen, or the worker is stopping. */
export type Refusal = 'cancelled' | 'stopped';

/**
 * The run loop's journal (docs/adr/0025-run-loop-steps.md): the one place that decides which of a
 * lease's events ride together in one commit, on top of the lease scope (lease-scope.ts), which
 * holds the queue, the fence and the run row the last write returned. Steps hand it events and say
 * what they are; it decides when they are committed:
 *
 * - a step's `tools_completed` checkpoint is held and rides with the next model call's start; any
 *   other write first commits it on its own (as it was before it was held);
 * - a model response whose tool calls are all pure computations is queued with its checkpoint (it
 *   rides with the calls' results and the next start), one that proposes other calls (or arrives
 *   while stopping) is committed at once, and a final answer leads the terminal write;
 * - a model call's or a consequential tool's start is conditional (`'current'`): refused, with
 *   nothing written, once a cancel was requested since the lease's last write;
 * - every checkpoint carries the latest compaction reference of the run's builds (ADR 0017), and
 *   the checkpoint version is the journal's latest plus one.
 */
export class LoopJournal {
  private lease: LeaseScope | null = null;
  private principal: Principal | null = null;
  private contextRef: ContextCheckpointRef | null = null;
  /** The step's `tools_completed` checkpoint, waiting for the next model call's start. */
  private held: { events: NewEvent[]; checkpoint: KnownCheckpoint } | null = null;
  /** A final answer's response, written ahead of the terminal events in the terminal write. */
  private lead: NewEvent[] | null = null;
  private found: RunRecord | null = null;
  /** A newer message asked the run to stop (issue 33): seen by the heartbeat, a refused write, or the run row. */
  private interrupted = false;

  constructor(
    private readonly deps: JournalDeps,
    readonly claim: RunClaim,
  ) {}

  /** From here on every write goes through the lease scope (before, a plain fenced append). */
  begin(lease: LeaseScope, principal: Principal): void {
    this.lease = lease;
    this.principal = principal;
  }

  get scope(): LeaseScope {
    if (!this.lease) throw new Error(`run ${this.claim.runId}: the journal has no lease scope yet`);
    return this.lease;
  }

  /** The run row as the last write left it (null before the lease began). */
  get run(): RunRecord | null {
    return this.lease?.run ?? null;
  }

  /** The run row the lease began with, before its scope exists (for the run's state). */
  noteRun(run: RunRecord): void {
    this.found = run;
  }

  /**
   * The run aggregate's state for the worker's decisions: from the row the last write returned (or
   * the lease began with). Without either, the run is the claim's: running under this lease.
   */
  /** The heartbeat saw an interrupt request: the loop stops at its next safe point. */
  noteInterrupt(): void {
    this.interrupted = true;
  }

  /** Whether the run must stop for a newer message before its next model call or tool. */
  interruptRequested(): boolean {
    return this.interrupted || (this.lease?.run.interrupt ?? this.found?.interrupt ?? null) !== null;
  }

  runState(): RunState {
    const row = this.lease?.run ?? this.found;
    if (row) return runStateOf(row);
    return { runId: this.claim.runId, status: 'running', cancelRequested: false, everStarted: true };
  }

  /** The run's latest checkpoint: held, queued or written. */
  get checkpoint(): KnownCheckpoint | null {
    return this.held?.checkpoint ?? this.lease?.checkpoint ?? null;
  }

  /** The latest checkpoint's version plus one, with `state`. */
  nextCheckpoint(state: CheckpointState): KnownCheckpoint {
    return { version: (this.checkpoint?.version ?? 0) + 1, state };
  }

  /** The lease's events not committed yet when a step's checkpoint is held (a build must see them), else null. */
  uncommitted(): readonly NewEvent[] | null {
    return this.held ? [...this.scope.queuedEvents, ...this.held.events] : null;
  }

  /** The compaction reference of the latest build: carried by every checkpoint from now on. */
  noteContext(ref: ContextCheckpointRef | null): void {
    if (ref) this.contextRef = ref;
  }

  /** Commits `events` (after anything queued) now. */
  async commit(events: readonly NewEvent[], checkpoint?: KnownCheckpoint): Promise<void> {
    await this.flushHeld();
    await this.append(events, checkpoint);
  }

  /** Queues `events` for the next commit: only for events nothing external happens before. */
  queue(events: readonly NewEvent[]): void {
    this.scope.defer(withTraceId([...events]));
  }

  /** Commits what is queued: a read of the records that follows must see it. */
  async beforeRead(): Promise<void> {
    await this.append([]);
  }

  /** Commits what is held or queued, if anything (before a stop). */
  async settle(): Promise<void> {
    await this.flushHeld();
  }

  /** The step's tools are done: its checkpoint is held for the next model call's start. */
  holdStepCheckpoint(state: CheckpointState): void {
    const checkpoint = this.nextCheckpoint(state);
    const events = decideRun(this.runState(), this.claim.runId, {
      kind: 'CheckpointRun',
      checkpointVersion: checkpoint.version,
      step: state.step,
    });
    this.held = { events, checkpoint };
  }

  /**
   * Commits a model call's start after what rides with it (the held step checkpoint, then `carried`,
   * the build's events), conditionally (`commitUnlessCancelled`). When refused, the carried events
   * are queued for the run's next write (the terminal one).
   */
  async startModelCall(
    carried: readonly NewEvent[],
    start: readonly NewEvent[],
    signal: AbortSignal,
  ): Promise<Refusal | null> {
    const held = this.held;
    this.held = null;
    const riding = [...(held?.events ?? []), ...carried];
    const refused = await this.commitUnlessCancelled([...riding, ...start], signal, held?.checkpoint);
    if (refused !== null)
      this.scope.defer(withTraceId(riding), held ? this.withContextRef(held.checkpoint) : undefined);
    return refused;
  }

  /**
   * The parent's wait for its children and the children's sessions and runs, in one transaction
   * (ADR 0037), conditional like a tool's start: refused, with nothing materialized, once a cancel
   * was requested since the lease's last write.
   */
  async suspendWithChildren(
    events: readonly NewEvent[],
    checkpoint: KnownCheckpoint,
    children: readonly SessionAppend[],
    signal: AbortSignal,
  ): Promise<Refusal | null> {
    await this.flushHeld();
    return this.commitUnlessCancelled(events, signal, checkpoint, children);
  }

  /** A tool with an effect starts only if no cancel was requested since the lease's last write (plan §2.5). */
  startTool(events: readonly NewEvent[], signal: AbortSignal): Promise<Refusal | null> {
    return this.commitUnlessCancelled(events, signal);
  }

  /**
   * Records a model response with its `model_completed` checkpoint state and returns the run row
   * the budgets judge it on (the run projection's usage after it, when it is not written yet).
   */
  async recordResponse(
    events: readonly NewEvent[],
    response: NewEvent<'model.response.completed'>['data'],
    state: CheckpointState,
    facts: ResponseFacts,
  ) {
    const lease = this.scope;
    const projected = (): RunRecord => ({
      ...lease.run,
      usage: usageAfterResponse(lease.run, response),
    });
    if (facts.continues && facts.pureOnly && !facts.stopping) {
      lease.defer(withTraceId([...events]), this.withContextRef(this.nextCheckpoint(state)));
      return projected();
    }
    if (facts.continues || facts.stopping) {
      await this.commit(events, this.nextCheckpoint(state));
      return lease.run;
    }
    this.lead = [...events];
    return projected();
  }

  /**
   * The run's single terminal write: whatever leads it (a final answer's response), then `events`.
   * No checkpoint of its own (ADR 0057): a run that ended is never resumed — no status leads out of
   * a terminal one — and runs ended outside the loop (a cancelled queued run, a reaped one) never
   * had one. A checkpoint still queued (a step's, named by its `run.checkpointed`) is written.
   */
  async finish(events: readonly NewEvent[]): Promise<void> {
    await this.flushHeld();
    const lead = this.lead;
    this.lead = null;
    await this.append([...(lead ?? []), ...events]);
  }

  /**
   * The worker hands the run back (shutdown): `run.released`, conditionally (`commitUnlessCancelled`,
   * judged on the cancel alone: the shutdown is what stops the loop). A run handed back with a cancel
   * requested since the lease's last write would sit queued, its cancel pending, until some worker
   * claimed it again; refused instead (`'cancelled'`), with nothing written, so the caller ends it.
   */
  async release(workerId: string, reason: string): Promise<'released' | 'cancelled'> {
    await this.flushHeld();
    const events = decideRun(this.runState(), this.claim.runId, { kind: 'ReleaseRun', workerId, reason });
    return (await this.commitUnlessCancelled(events, null)) === null ? 'released' : 'cancelled';
  }

  private async flushHeld(): Promise<void> {
    if (!this.held) return;
    const held = this.held;
    this.held = null;
    await this.append(held.events, held.checkpoint);
  }

  /**
   * Commits `events` (after the lease's queued ones) in one fenced append that is also conditional
   * (`'current'`, lease-scope.ts): not sent at all when the run row the lease's last write returned
   * has a cancel request, and refused by the store unless the session's last sequence is where that
   * write (or the claim) left it. The loop decided to go on (call the model, start a tool with an
   * effect) on that row, so the condition is what makes the decision exact: a cancel requested
   * since is either in the row already or has advanced the session's sequence. No round trip is
   * added when nothing else was appended (the append checks the sequence anyway).
   *
   * When refused by the sequence, the events appended since are read: a cancel of this run (or a
   * stop of the loop) returns `'cancelled'` (`'stopped'`) with nothing written and the lease's
   * queued events still queued; anything else (an `artifact.created`, or an event of this lease's
   * own parallel calls) and the write is tried again, conditional on the new last sequence.
   * Returns null once committed. Without a `signal` (the write is the loop's stop itself) only a
   * cancel refuses it.
   */
  private async commitUnlessCancelled(
    events: readonly NewEvent[],
    signal: AbortSignal | null,
    checkpoint?: KnownCheckpoint,
    alongside?: readonly SessionAppend[],
  ): Promise<Refusal | null> {
    let after = this.scope.knownThrough;
    let condition: number | 'current' = 'current';
    for (;;) {
      try {
        await this.append(events, checkpoint, condition, alongside);
        return null;
      } catch (e) {
        if (e instanceof CancelRequestedSince) return signal?.aborted ? 'stopped' : 'cancelled';
        if (!(e instanceof ConcurrencyConflict) || after === null) throw e;
        const since = await this.deps.store.listAfter(this.claim.sessionId, after, this.principal!);
        if (since.length === 0) throw e;
        after = since[since.length - 1].sequence;
        condition = after;
        if (signal?.aborted) return 'stopped';
        if (since.some((ev) => ev.type === 'run.interrupt_requested' && ev.runId === this.claim.runId)) {
          this.interrupted = true;
          return 'cancelled';
        }
        if (since.some((ev) => ev.type === 'run.cancel_requested' && ev.runId === this.claim.runId)) return 'cancelled';
      }
    }
  }

  /** Every checkpoint carries the latest compaction reference of the run's builds (ADR 0017). */
  private withContextRef(checkpoint: KnownCheckpoint): KnownCheckpoint {
    const ref = this.contextRef ?? this.lease?.checkpoint?.state.context;
    if (!ref || checkpoint.state.context !== undefined) return checkpoint;
    return { ...checkpoint, state: { ...checkpoint.state, context: ref } };
  }

  /** One fenced append, traced (`checkpoint.save` spans) and shown to the commit observer. */
  private append(
    events: readonly NewEvent[],
    checkpoint?: KnownCheckpoint,
    condition?: number | 'current',
    alongside?: readonly SessionAppend[],
  ): Promise<RunWriteResult | null> {
    const { telemetry } = this.deps;
    const runId = this.claim.runId;
    const cp = checkpoint ? this.withContextRef(checkpoint) : undefined;
    // Checkpoints the lease queued that this write saves too: each gets its `checkpoint.save`.
    const queued = (this.lease?.queuedCheckpointsSavedWith(events, cp) ?? []).map((c) => ({
      version: c.version,
      phase: c.state.phase,
      step: c.state.step,
    }));
    const write = () => this.observed(this.appendFenced(withTraceId([...events]), cp, condition, alongside));
    return telemetry.checkpointsSavedBy(runId, queued, () => {
      if (!cp) return write();
      return telemetry.checkpointSave(
        runId,
        { version: cp.version, phase: cp.state.phase, step: cp.state.step },
        write,
      );
    });
  }

  private async observed(written: Promise<RunWriteResult | null>): Promise<RunWriteResult | null> {
    const result = await written;
    if (result && this.deps.onCommitted) await this.deps.onCommitted(result.events);
    return result;
  }

  /** Through the lease scope once it exists; before, a plain fenced append. */
  private appendFenced(
    events: NewEvent[],
    checkpoint?: KnownCheckpoint,
    condition?: number | 'current',
    alongside?: readonly SessionAppend[],
  ) {
    if (this.lease) return this.lease.write(events, checkpoint, condition, alongside);
    return this.deps.journal.write(this.claim, events, {
      // Without a lease there is no run row or sequence to judge `'current'` on.
      ...(typeof condition === 'number' ? { expectedSequence: condition } : {}),
      checkpoints: checkpoint
        ? [
            {
              version: checkpoint.version,
              state: checkpoint.state as unknown as Record<string, unknown>,
              throughEvent: events.length - 1,
            },
          ]
        : [],
    });
  }
}
