import type { InterruptMode } from './multitask';
import type { StoredEvent } from '../events/payloads';
import type { McpServerGrant } from '../mcp-grants';
import type { CheckpointState } from './checkpoint';
import type { RunFailure } from './failure';
import type { RunLimits } from './limits';
import type { RunStatus } from './status';
import type { RunUsage } from './usage';

/** The run read model as the application and runtime see it (never a TypeORM entity). */
/** A request to stop a run for a newer message of its session (`run.interrupt_requested`). */
export interface RunInterrupt {
  readonly mode: InterruptMode;
  readonly byRunId: string;
}

export interface RunRecord {
  readonly id: string;
  readonly sessionId: string;
  readonly tenantId: string;
  readonly principalId: string;
  /** The run whose `delegate.run` made this one (plan §27.6), or null for a turn. */
  readonly parentRunId: string | null;
  /** A child run's brief, tool subset and scopes (`run.delegated`), or null. */
  readonly delegation: RunDelegation | null;
  readonly agentId: string;
  readonly agentVersion: number;
  readonly modelPolicy: string;
  readonly status: RunStatus;
  readonly priority: number;
  readonly attempts: number;
  readonly stepCount: number;
  readonly modelCallCount: number;
  readonly toolCallCount: number;
  readonly limits: RunLimits;
  readonly usage: RunUsage;
  readonly userMessageId: string | null;
  readonly finalText: string | null;
  readonly leaseOwner: string | null;
  readonly leaseEpoch: number;
  readonly leaseExpiresAt: string | null;
  readonly cancelRequestedAt: string | null;
  readonly deadlineAt: string | null;
  readonly failure: RunFailure | null;
  readonly idempotencyKey: string | null;
  /** The run's recorded scope set (`run.queued` v2, ADR 0032): sorted names; tools are authorized against it. */
  readonly scopes: readonly string[];
  /** The run it was queued behind (`multitask_strategy: enqueue`), or null. */
  readonly queuedBehind: string | null;
  /** Set once a newer message asked the run to stop (`multitask_strategy: interrupt`), with that message's run. */
  readonly interrupt: RunInterrupt | null;
  /** The schedule whose occurrence queued it (`run.queued` v4, issue 31), or null; absent in records built before it. */
  readonly scheduleId?: string | null;
  /**
   * For a queued run read through the API: how many of its session's runs are ahead of it (0: it is
   * next to be claimed); null for a run that is not queued, or when the reader did not ask.
   */
  readonly queuePosition: number | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly startedAt: string | null;
  readonly completedAt: string | null;
}

/** What `run.delegated` recorded of a child run (its parent's id is `RunRecord.parentRunId`). */
export interface RunDelegation {
  readonly parentSessionId: string;
  readonly invocationId: string;
  readonly briefIndex: number;
  /** The only tools the child may call: a subset of the parent's pinned set. */
  readonly tools: readonly string[];
  /** The child's scopes: a subset of the parent's. */
  readonly scopes: readonly string[];
  /** The parent's span when it delegated (the child's trace links to it), or null. */
  readonly parentTrace: TraceRef | null;
}

/** What a worker holds after a successful claim: every later write is fenced by `leaseEpoch`. */
export interface RunClaim {
  readonly runId: string;
  readonly sessionId: string;
  readonly tenantId: string;
  readonly leaseEpoch: number;
  readonly attempt: number;
  /** The worker holding the lease. */
  readonly workerId: string;
  /**
   * The run's trace root (`run.started` v2): the first traced attempt's `agent.run` span. Every
   * later attempt continues this trace (ADR 0015). Absent or null when tracing was never on.
   */
  readonly trace?: TraceRef | null;
  /** Claimed from RUNNING with an expired lease: the previous worker died or hung (a recovery). */
  readonly recovered?: boolean;
  /**
   * What the claim read for the start of the lease, so the run loop need not read it again
   * (docs/adr/0013-run-loop-round-trips.md). Exact as of the claim's commit: it was read in the
   * claim's statement and the claim's append held the session-sequence gate against that read.
   * Absent when the claimer did not read it (the loop then reads it itself).
   */
  readonly preloaded?: ClaimPreload;
}

/** The run's state at its claim: the run row as the claim's append left it, and its resume point. */
export interface ClaimPreload {
  readonly run: RunRecord;
  /** The run's latest checkpoint, or null when it has none. */
  readonly checkpoint: { readonly version: number; readonly state: CheckpointState } | null;
  /** The session sequence of the run's first event (where its conversation starts). */
  readonly firstSequence: number;
  /**
   * The operator MCP grants of the run's agent (ADR 0020), read by the claim's statement: what the
   * lease's start would otherwise read right after the claim (a grant applies from the next lease).
   */
  readonly operatorGrants?: readonly McpServerGrant[];
  /**
   * Whether the run had any tool invocation at the claim. Only the lease holder proposes tool calls,
   * so a lease that starts with none knows the answer to "was this call proposed before, and how
   * often was it made" until it proposes one itself.
   */
  readonly hasToolInvocations?: boolean;
  /**
   * The session's last events as of the claim's commit, oldest first and exactly as a read of the
   * log returns them: the few the claim's statement read before its append, then the claim's own
   * events. A context fold that they continue (or a session short enough that they start at its
   * first event) needs no read of the log for the run's first build.
   */
  readonly sessionTail?: readonly StoredEvent[];
}

/** A W3C trace context reduced to its ids: 32 and 16 lowercase hex characters. */
export interface TraceRef {
  readonly traceId: string;
  readonly spanId: string;
}
