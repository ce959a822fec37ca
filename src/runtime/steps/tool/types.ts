import type { AgentSpec } from '../../../domain/agent';
import type { ChildBatch } from '../../../domain/delegation/materialize';
import type { ChildAgent, DelegatingParent } from '../../../domain/delegation/plan';
import type { NewEvent } from '../../../domain/events/payloads';
import type { Principal } from '../../../domain/principal';
import type { Clock, IdFactory } from '../../../ports/clock';
import type { RunRepository, TransientPublisher } from '../../../ports/run-store';
import type { InvocationRecord, ToolRecordStore } from '../../../ports/tool-records';
import type { PolicyEngine } from '../../../policy/policy-engine';
import type { ToolRegistry } from '../../../tools/registry';
import type { ToolResultArtifacts } from '../../tool-result-artifacts';
import type { RunTelemetry } from '../../tracing';

export interface ToolCallContext {
  readonly runId: string;
  readonly sessionId: string;
  readonly step: number;
  readonly agent: AgentSpec;
  readonly principal: Principal;
  readonly signal: AbortSignal;
  /** The run's deadline, passed to tools (sandbox.run_command bounds its timeout by it). */
  readonly deadlineAt?: string | null;
  /** A child run's tool subset (`run.delegated`): any other tool is denied. Absent for a turn. */
  readonly allowedTools?: ReadonlySet<string> | null;
  /** What `delegate.run` plans children from; absent when the run may not delegate. */
  readonly delegation?: DelegationContext;
  /** Whether a newer message asked the run to stop (issue 33): no tool starts once it did. */
  readonly interrupted?: () => boolean;
}

/** The parent as `delegate.run` sees it, its fan-out cap, and how a brief's agent is found. */
export interface DelegationContext {
  readonly parent: DelegatingParent;
  readonly maxFanOut: number;
  /** The current version of each named agent (unknown ids are left out). */
  readonly agents: (agentIds: readonly string[]) => Promise<ReadonlyMap<string, ChildAgent>>;
  /** Whether the tenant may have `children` more active runs (per-tenant admission); absent: no ceiling. */
  readonly admits?: (tenantId: string, children: number) => Promise<string | null>;
}

/** Writes events for one run (fenced by the caller's lease). */
export type AppendForRun = (events: NewEvent[]) => Promise<void>;

/**
 * How the run loop lets the pipeline batch its writes (docs/adr/0013-run-loop-round-trips.md).
 * `defer` queues events that need no durable boundary before the next write; they are committed, in
 * order, with it. The pipeline defers only what recovery can re-derive: a call's proposal,
 * authorization, denial or refusal before anything runs, and — with `deferResult`, for a tool that
 * is not non-idempotent — its result. `tool.call.started` and the effect watermark are always
 * durable before the tool executes.
 */
export interface ProcessOptions {
  /** The invocation already looked up by `lookup` (saves reading it again). */
  readonly existing?: InvocationRecord | null;
  /** The call's invocations as `lookupCall` read them with `existing` (saves the loop-detection read). */
  readonly sameCall?: readonly InvocationRecord[];
  readonly defer?: (events: NewEvent[]) => void;
  /** The caller commits before anything else runs (the step's checkpoint follows): defer the result too. */
  readonly deferResult?: boolean;
  /**
   * Writes the start of a tool that is not a pure computation (with whatever is queued before it)
   * unless the run's cancel was requested since the caller last wrote, in which case nothing is
   * written and it resolves `'cancelled'` (`'stopped'`: the worker is stopping); null once written.
   * Without it the start is appended unconditionally.
   */
  readonly start?: (events: NewEvent[]) => Promise<'cancelled' | 'stopped' | null>;
}

/** What a suspended run waits for: an approval (or review) by id, or the user's answer to a question. */
export type Awaiting =
  | { readonly kind: 'approval'; readonly approvalId: string }
  | { readonly kind: 'user'; readonly questionId: string; readonly question: string }
  /** The children a `delegate.run` call planned: materialized with the parent's wait, in one transaction. */
  | { readonly kind: 'children'; readonly invocationId: string; readonly children: readonly ChildBatch[] };

/**
 * `suspend`: the run must wait for a human. The run loop appends `before`, a checkpoint and the
 * run's WAITING_* event for `awaiting`
 * atomically, in that order (plan §9.3: invocation, approval, checkpoint, WAITING_*, lease release,
 * event), and returns without a terminal write. `stopped`: the worker was told to stop before the
 * tool started (it never runs) or while it ran; nothing was written after `tool.call.started`, so
 * recovery decides (plan §8.4). `cancelled`: the run's cancel was requested before the tool started
 * (`ProcessOptions.start`); it does not run, and the call is refused (`tool.call.denied`,
 * `run_cancelled`; `tool.call.failed` for a call an interrupted lease had started) with the
 * caller's next write.
 */
export type ToolCallOutcome =
  | { readonly kind: 'done' }
  | { readonly kind: 'loop_detected'; readonly toolName: string }
  | { readonly kind: 'suspend'; readonly before: NewEvent[]; readonly awaiting: Awaiting }
  | { readonly kind: 'stopped' }
  | { readonly kind: 'cancelled' };

export interface ToolPipelineDeps {
  readonly registry: ToolRegistry;
  readonly runs: RunRepository;
  readonly records: ToolRecordStore;
  readonly policy: PolicyEngine;
  readonly clock: Clock;
  readonly ids: IdFactory;
  /** Spans (policy.evaluate, tool.execute) and tool metrics; none when omitted. */
  readonly telemetry?: RunTelemetry;
  /** Oversized results are stored here whole; the model gets an excerpt and the reference (plan §18.4). */
  readonly artifacts?: ToolResultArtifacts;
  /** Where a call's progress reports go live (`tool.call.progress`, ADR 0048); none when omitted. */
  readonly transient?: TransientPublisher;
}

/** The pipeline's services, telemetry resolved. */
export type PipelineServices = ToolPipelineDeps & { readonly telemetry: RunTelemetry };
