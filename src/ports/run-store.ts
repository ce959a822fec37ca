import type { Principal } from '../domain/principal';
import type { StoredCheckpoint } from '../domain/run/checkpoint';
import type { RunClaim, RunRecord, TraceRef } from '../domain/run/run';

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
  heartbeat(claim: RunClaim, leaseMs: number): Promise<{ held: boolean; cancelRequested: boolean }>;
}

export interface CheckpointStore {
  latest(runId: string): Promise<StoredCheckpoint | null>;
}

/** Transient frames (text and reasoning deltas): delivered live, never persisted. */
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
}
