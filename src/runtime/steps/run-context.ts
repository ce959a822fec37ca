import type { AgentSpec } from '../../domain/agent';
import type { ConsensusRun } from '../../domain/consensus/settings';
import type { Principal } from '../../domain/principal';
import type { Observation } from '../../domain/run/next-step';
import type { RunOutcome } from '../../domain/run/outcome';
import type { RunClaim, RunRecord } from '../../domain/run/run';
import type { ToolSpec } from '../../domain/tools/tool-spec';
import type { ContextEngine } from '../../context/engine';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { Clock, IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { RunJournal } from '../../ports/run-journal';
import type { Logger } from '../../ports/logger';
import type { Metrics } from '../../ports/metrics';
import type { CheckpointStore, RunQueue, RunRepository, TransientPublisher } from '../../ports/run-store';
import type { SkillSource } from '../../ports/skills';
import type { SkillSummary } from '../../domain/skills/skill';
import type { ToolRecordStore } from '../../ports/tool-records';
import type { PolicyEngine } from '../../policy/policy-engine';
import type { ToolRegistry } from '../../tools/registry';
import type { MemoizedAgentCatalog } from '../agent-memo';
import type { CommitObserver, LoopJournal } from '../journal';
import type { ModelChain } from '../model-chain';
import type { ModelRouter } from '../model-router';
import type { SessionToolCache } from '../session-tool-cache';
import type { ToolCallOutcome, ToolPipeline } from '../tool-pipeline';
import type { ToolResultArtifacts } from '../tool-result-artifacts';
import type { RunTelemetry } from '../tracing';

export interface RunLoopDeps {
  readonly store: EventStore;
  /** The lease holder's fenced writes and checkpoints (ADR 0026). */
  readonly journal: RunJournal;
  readonly runs: RunRepository;
  readonly checkpoints: CheckpointStore;
  readonly queue: RunQueue;
  readonly router: ModelRouter;
  readonly registry: ToolRegistry;
  readonly agents: AgentCatalog;
  readonly transient: TransientPublisher;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  readonly principalFor: (run: RunRecord) => Principal;
  /** Tool lifecycle read models (invocations, approvals) for idempotency and recovery. */
  readonly records: ToolRecordStore;
  /** The deterministic, versioned tool policy (plan §9). */
  readonly policy: PolicyEngine;
  /** Plan §19 metrics; none recorded when omitted. */
  readonly metrics?: Metrics;
  /** The context engine (plan §11); one with the extractive compactor over `store` when absent. */
  readonly context?: ContextEngine;
  /** Tool definitions pinned per session (MCP tools may change under a running session); optional. */
  readonly sessionTools?: SessionToolCache;
  /** Where oversized tool results are kept (plan §18.4); without it they are only truncated. */
  readonly artifacts?: ToolResultArtifacts;
  /** The process's skills (metadata rendered in the prefix for agents that enable them); optional. */
  readonly skills?: SkillSource;
  /**
   * Called with the events of every append this loop commits, after the commit and before the loop
   * goes on (synchronously, so a stop it triggers is seen at the loop's next check; a promise it
   * returns is waited for before the loop goes on). The eval harness crashes its worker, or cancels
   * the run, exactly at an event through it; nothing else should need it.
   */
  readonly onCommitted?: CommitObserver;
  /**
   * Delegation (`delegate.run`, ADR 0037): offered to agents that do not opt out when `enabled`
   * (DELEGATION_ENABLED=1; an agent's `delegation.enabled` decides for itself), with the tenant's
   * admission of more active runs. Off when absent.
   */
  readonly delegation?: {
    readonly enabled: boolean;
    readonly admits?: (tenantId: string, children: number) => Promise<string | null>;
  };
}

export interface RunLoopSettings {
  readonly leaseMs: number;
  readonly maxModelAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
}

export type RunLoopResult = 'finished' | 'released' | 'fenced' | 'abandoned';

/** What every step executor of one lease shares: the claim, the stop signal, the services, the journal. */
export interface LeaseContext {
  readonly deps: RunLoopDeps;
  readonly settings: RunLoopSettings;
  readonly claim: RunClaim;
  readonly signal: AbortSignal;
  readonly telemetry: RunTelemetry;
  readonly engine: ContextEngine;
  readonly pipeline: ToolPipeline;
  readonly agents: MemoizedAgentCatalog;
  readonly journal: LoopJournal;
}

/** What the lease found when it began (prepare.ts); fixed for the lease. */
export interface PreparedRun {
  /** The run row at the lease's start: its limits, deadline, model policy and user message do not change. */
  readonly run: RunRecord;
  readonly agent: AgentSpec;
  readonly principal: Principal;
  /** The model the run calls now: its policy's route, or a fallback it moved to (ADR 0046). */
  readonly models: ModelChain;
  readonly tools: readonly ToolSpec[];
  /** The skills rendered in the prefix (undefined when the process has no skill source). */
  readonly skills: readonly SkillSummary[] | undefined;
  /** Where this run's conversation starts in the session log. */
  readonly firstSequence: number;
  /** The session's last sequence as the claim read it (its session tail), if known. */
  readonly claimedThrough: number | null;
  /** The run may call `delegate.run` (offered to it; never to a child run). */
  readonly delegates: boolean;
  /** The run is answered by consensus (ADR 0047): its settings and question; null for an ordinary turn. */
  readonly consensus: ConsensusRun | null;
}

/** A tool call that must wait for a human (approval, review or user input). */
export type Suspension = Extract<ToolCallOutcome, { kind: 'suspend' }>;

/**
 * What a step executor reports: what happened (for `nextStep`) and, when it differs from the row
 * the journal's last write returned, the run row the next decision is judged on (a response not
 * written yet, whose usage the run projection computed).
 */
export interface StepReport {
  readonly observation: Observation<Suspension>;
  readonly run?: RunRecord;
}

export function observed(observation: Observation<Suspension>, run?: RunRecord): StepReport {
  return run ? { observation, run } : { observation };
}

export function ended(outcome: RunOutcome): StepReport {
  return { observation: { kind: 'ended', outcome } };
}

export const STOPPED: StepReport = { observation: { kind: 'stopped' } };
