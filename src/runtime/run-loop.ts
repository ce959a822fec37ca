import { DatabaseUnavailable, LeaseFencedError } from '../domain/errors';
import { failedWith, type RunOutcome } from '../domain/run/outcome';
import type { RunClaim } from '../domain/run/run';
import { ContextEngine } from '../context/engine';
import { noopMetrics } from '../ports/metrics';
import { agentVersionMemo, type MemoizedAgentCatalog } from './agent-memo';
import { LoopJournal } from './journal';
import { finish } from './steps/finish';
import { drive } from './steps/machine';
import type { LeaseContext, RunLoopDeps, RunLoopResult, RunLoopSettings } from './steps/run-context';
import { stop } from './steps/stop';
import { LoopStopped, stopReasonOf } from './stop-reason';
import { ToolPipeline } from './tool-pipeline';
import { RunTelemetry, type AttemptSpan } from './tracing';

export type { CommitObserver } from './journal';
export type { RunLoopDeps, RunLoopResult, RunLoopSettings } from './steps/run-context';

/**
 * Executes one claimed run to a terminal outcome or a safe stop (plan §12), as a machine of small
 * steps (docs/adr/0025-run-loop-steps.md, `steps/machine.ts`). Every write is fenced by the claim's
 * lease epoch and goes through the lease's journal; no transaction is held across a model or tool
 * call; the terminal write happens exactly once, in the finish step. A run resumed by another
 * worker continues from its latest checkpoint; with no checkpoint it re-derives the same point
 * from the event log.
 */
export class RunLoop {
  private readonly pipeline: ToolPipeline;
  private readonly telemetry: RunTelemetry;
  private readonly context: ContextEngine;
  /** The heartbeat of each execution in progress, by run: a nudge about the run beats it now. */
  private readonly beats = new Map<string, () => void>();
  /** The journal of each execution in progress (its run row is the `agent.run` span's outcome). */
  private readonly journals = new WeakMap<RunClaim, LoopJournal>();
  private readonly agents: MemoizedAgentCatalog;
  constructor(
    private readonly deps: RunLoopDeps,
    private readonly settings: RunLoopSettings,
  ) {
    this.telemetry = new RunTelemetry(deps.metrics ?? noopMetrics, deps.runs, () => deps.clock.nowMs());
    this.context = deps.context ?? new ContextEngine(deps.store, { log: deps.log });
    this.agents = agentVersionMemo(deps.agents);
    this.pipeline = new ToolPipeline({
      telemetry: this.telemetry,
      registry: deps.registry,
      runs: deps.runs,
      records: deps.records,
      policy: deps.policy,
      clock: deps.clock,
      ids: deps.ids,
      artifacts: deps.artifacts,
      transient: deps.transient,
    });
  }

  /** One attempt under its `agent.run` span (`attempt`: the span the worker started before claiming). */
  execute(claim: RunClaim, shutdown: AbortSignal, attempt?: AttemptSpan): Promise<RunLoopResult> {
    return this.telemetry.attempt(
      claim,
      attempt,
      () => this.executeAttempt(claim, shutdown),
      () => this.journals.get(claim)?.run ?? null,
    );
  }

  private async executeAttempt(claim: RunClaim, shutdown: AbortSignal): Promise<RunLoopResult> {
    const controller = new AbortController();
    const onShutdown = () =>
      controller.abort(shutdown.reason instanceof LoopStopped ? shutdown.reason : new LoopStopped('shutdown'));
    shutdown.addEventListener('abort', onShutdown, { once: true });
    if (shutdown.aborted) onShutdown();
    const stopHeartbeat = this.heartbeat(claim, controller);
    const ctx = this.leaseContext(claim, controller.signal);
    try {
      const outcome = await drive(ctx);
      // A suspended run has already released its lease (WAITING_*); there is nothing left to write.
      if (outcome === 'suspended') return 'released';
      if (outcome === 'stopped' || stopReasonOf(controller.signal) === 'abandon') return stop(ctx);
      await finish(ctx, outcome);
      return 'finished';
    } catch (e) {
      if (e instanceof LeaseFencedError) return 'fenced';
      if (e instanceof DatabaseUnavailable) return this.abandoned(claim, e);
      if (e instanceof LoopStopped || controller.signal.aborted) return stop(ctx);
      return this.crashed(ctx, e);
    } finally {
      stopHeartbeat();
      shutdown.removeEventListener('abort', onShutdown);
    }
  }

  private leaseContext(claim: RunClaim, signal: AbortSignal): LeaseContext {
    const { deps } = this;
    const telemetry = this.telemetry;
    const journal = new LoopJournal(
      {
        store: deps.store,
        journal: deps.journal,
        telemetry,
        clock: deps.clock,
        onCommitted: deps.onCommitted,
      },
      claim,
    );
    this.journals.set(claim, journal);
    const { settings, pipeline, agents } = this;
    return { deps, settings, claim, signal, telemetry, engine: this.context, pipeline, agents, journal };
  }

  /**
   * Beats the heartbeat of `runId` now, when this process executes it: a NOTIFY named the run (a
   * newer message asked it to stop, issue 33), so the stop is seen at once, not at the next beat.
   */
  poke(runId: string): void {
    this.beats.get(runId)?.();
  }

  /**
   * Renews the lease every lease/3; a lost lease or a cancel request stops the loop. An interrupt
   * (a newer message, issue 33) aborts nothing in flight: the journal notes it and the loop stops at
   * its next safe point (before the next model call or tool). Returns the function that ends it.
   */
  private heartbeat(claim: RunClaim, controller: AbortController): () => void {
    const beat = () => {
      if (controller.signal.aborted) return;
      this.deps.queue.heartbeat(claim, this.settings.leaseMs).then(
        (hb) => {
          if (!hb.held) controller.abort(new LoopStopped('fenced'));
          else if (hb.interruptRequested) this.journals.get(claim)?.noteInterrupt();
          else if (hb.cancelRequested) controller.abort(new LoopStopped('cancelled'));
        },
        (e: unknown) => this.deps.log.warn('heartbeat failed', { runId: claim.runId, error: String(e) }),
      );
    };
    const timer = setInterval(beat, Math.max(100, Math.floor(this.settings.leaseMs / 3)));
    this.beats.set(claim.runId, beat);
    return () => {
      clearInterval(timer);
      if (this.beats.get(claim.runId) === beat) this.beats.delete(claim.runId);
    };
  }

  /**
   * The database went away mid-lease (a failover): whether the last write committed is unknown, so
   * the loop writes nothing more, as if fenced. The lease expires and the next claim, by any worker,
   * resumes the run from what the log holds (ADR 0031).
   */
  private abandoned(claim: RunClaim, e: DatabaseUnavailable): RunLoopResult {
    this.deps.log.warn('database unavailable: run left to its lease', { runId: claim.runId, error: e.message });
    return 'abandoned';
  }

  /** The loop threw: the run fails with `internal_error` (unless it was fenced meanwhile). */
  private async crashed(ctx: LeaseContext, e: unknown): Promise<RunLoopResult> {
    const message = e instanceof Error ? e.message : String(e);
    this.deps.log.error('run loop crashed', { runId: ctx.claim.runId, error: message });
    const outcome: RunOutcome = failedWith('internal_error', message, 'internal_error');
    try {
      await finish(ctx, outcome);
    } catch (e2) {
      if (e2 instanceof DatabaseUnavailable) return this.abandoned(ctx.claim, e2);
      if (!(e2 instanceof LeaseFencedError)) throw e2;
      return 'fenced';
    }
    return 'finished';
  }
}
