import type { Principal } from '../domain/principal';
import type { StoredCheckpoint } from '../domain/run/checkpoint';
import type { RunClaim, RunRecord, TraceRef } from '../domain/run/run';
import type { ChildOutcome } from '../domain/delegation/join';

/** Reads the run read model. A principal scopes the read to its tenant; `null` is the worker (system). */
export interface RunRepository {
  get(runId: string, principal: Principal | null): Promise<RunRecord | null>;
  /** Invocations of a run with the same normalized call (tool name + arguments hash). */
  priorInvocations(
    runId: string,
    toolName: string,
    argumentsHash: string,
  ): Promise<readonly { status: string; result: unknown }[]>;
  /** The invocation already recorded under an idempotency key, if any. */
  invocationByKey(idempotencyKey: string): Promise<{
    id: string;
    status: string;
    result: Record<string, unknown> | null;
    error: { code: string; message: string } | null;
  } | null>;
}

/**
 * The run queue (plan §14, ADR 0006): claim with a lease and a fencing epoch, heartbeat that
 * reports fencing, and the reaper's view of expired leases.
 */
export interface RunQueue {
  /**
   * Claims the next runnable run (queued, or running with an expired lease), or null. `trace` is
   * the worker's freshly started `agent.run` span: stored on `run.started` as the run's trace root
   * when the run has none yet; otherwise the stored root is kept and returned (ADR 0015).
   */
  claim(workerId: string, leaseMs: number, onlyRunId?: string, trace?: TraceRef | null): Promise<RunClaim | null>;
  /** Extends the lease; false means the worker has been fenced and must stop touching the run. */
  /**
   * Renews the lease: whether it is still held, and whether a stop was requested — a cancel, or an
   * interrupt for a newer message (`interruptRequested`, issue 33: the loop stops at its next safe
   * point instead of aborting what is in flight).
   */
  heartbeat(
    claim: RunClaim,
    leaseMs: number,
  ): Promise<{ held: boolean; cancelRequested: boolean; interruptRequested?: boolean }>;
}

export interface CheckpointStore {
  latest(runId: string): Promise<StoredCheckpoint | null>;
}

/**
 * Transient frames (text and reasoning deltas): delivered live, never persisted, and never carrying
 * a credential raw (the events' credential scan runs on them; a hit is published redacted).
 */
export interface TransientPublisher {
  publish(frame: {
    sessionId: string;
    runId: string;
    kind: 'text_delta' | 'reasoning_delta';
    text: string;
  }): Promise<void>;
  /**
   * The run's streamed text is about to be committed whole (its final answer): what has not been
   * sent yet need not be (clients replace the deltas with the committed message).
   */
  supersede(sessionId: string, runId: string): void;
  /**
   * The model's stream of the run's current turn ended: text held back by the credential scan (a
   * possible credential still being streamed) is published now, redacted. Resolves once sent.
   */
  endOfStream(sessionId: string, runId: string): Promise<void>;
  /**
   * A tool call's progress (ADR 0048): one transient `tool.call.progress` frame on the run's stream,
   * its message credential-scanned. Resolves once sent; a lost frame is not retried.
   */
  progress(frame: {
    sessionId: string;
    runId: string;
    invocationId: string;
    toolName: string;
    progress: number;
    total: number | null;
    message: string | null;
  }): Promise<void>;
}

/** A child run as its parent's join, cancellation and run view read it (ADR 0037). */
export interface ChildRun extends ChildOutcome {
  readonly tenantId: string;
  /** The `delegate.run` invocation of the parent that made it. */
  readonly invocationId: string;
  readonly createdAt: string;
}

/** The child runs of `delegate.run` (plan §27.6, ADR 0037). */
export interface ChildRunStore {
  /** The parent's child runs, oldest first, each with the artifacts its run created. `tenantId` null: the worker. */
  childrenOf(parentRunId: string, tenantId: string | null): Promise<ChildRun[]>;
  /** Parents waiting for children of which none is still active: joins a lost NOTIFY left undone. */
  joinableParents(limit: number): Promise<string[]>;
  /** Active children whose parent has ended: cancellations the parent's cancel did not reach. */
  orphanedChildren(limit: number): Promise<{ readonly runId: string; readonly tenantId: string }[]>;
  /** The tenant's active (non-terminal) runs, children included (per-tenant admission). */
  activeRunCount(tenantId: string): Promise<number>;
}
