import type { ContentPart } from '../conversation/items';
import type { FailureReason } from '../run/failure';
import type { InterruptMode, MultitaskStrategy } from '../run/multitask';
import type { RunLimits } from '../run/limits';
import type { CostSource, RunUsage, TokenUsage } from '../run/usage';
import type { StopReason } from '../model/model-events';
import type { ModelFallbackFrom } from '../model/fallback';
import type { CompactionSummary, CompactorKind, ContextBuildRecord, WorkingState } from '../context/working-state';
import type { MemoryEventPayloads } from './memory-events';
import type { OccurrenceFailureReason, ScheduleDefinition } from '../schedules/schedule';

/**
 * An approval resolved with edited arguments (issue 33, ADR 0044): the tool runs with
 * `editedArguments`; both canonical argument hashes and the editor are recorded for the audit.
 */
export interface ApprovalEdit {
  invocationId: string;
  originalArgumentsHash: string;
  editedArgumentsHash: string;
  editedArguments: Record<string, unknown>;
  editedBy: string;
}

/**
 * The current (newest) payload shape of every persisted event type (plan §6.8). Older shapes live
 * only in upcasters.ts and in the frozen fixtures under test/fixtures/events/.
 * Payloads never carry secrets, raw reasoning or full prompts. Long-term memory's events are
 * declared in memory-events.ts.
 */
export interface EventPayloads extends MemoryEventPayloads {
  'session.created': {
    agentId: string;
    agentVersion: number;
    principalId: string;
    title: string | null;
    metadata: Record<string, unknown>;
  };
  /**
   * A session created as a fork of another (issue 33, `POST /v1/sessions/{id}/fork`): its history is
   * the parent's log up to `parentSequence`, read through the parent by reference (nothing copied),
   * and its own stream continues from `parentSequence + 1`. `atSequence` is what the caller asked
   * for; with a replacement message (`replacedMessageId`) the prefix ends just before that message.
   */
  'session.forked': {
    agentId: string;
    agentVersion: number;
    principalId: string;
    title: string | null;
    metadata: Record<string, unknown>;
    parentSessionId: string;
    parentSequence: number;
    atSequence: number;
    replacedMessageId: string | null;
  };
  /** The session's title, taken from its first message or set by the user (`PATCH /v1/sessions/{id}`). */
  'session.title.changed': { title: string; source: 'first_message' | 'user' };
  'session.deleted': { reason: string | null };
  'user.message.created': { messageId: string; content: ContentPart[] };
  'run.queued': {
    agentId: string;
    agentVersion: number;
    principalId: string;
    modelPolicy: string;
    userMessageId: string | null;
    limits: RunLimits;
    priority: number;
    idempotencyKey: string | null;
    requestHash: string | null;
    /**
     * v2: the exact scope set the run may use (sorted, unique; ADR 0032): the submitter's scopes
     * narrowed to the agent's `allowed_scopes`. v1 runs ran with the local principal's fixed set,
     * which is what the upcaster gives them.
     */
    scopes: string[];
    /**
     * v3: the session's run this one was queued behind (its message arrived while that run worked,
     * `multitask_strategy: enqueue`); null when nothing was ahead of it. Such a run waits in the
     * session's FIFO (`sessions.queued_run_ids`) and is claimable once every run ahead has ended.
     * Optional on append (absent reads as null), so a v2-shaped payload still validates.
     */
    queuedBehind?: string | null;
    /** v4: the schedule whose occurrence queued the run (issue 31); absent or null for every other run. */
    scheduleId?: string | null;
    /** v3: the strategy that queued it behind another run, or null when nothing was ahead. */
    multitaskStrategy?: MultitaskStrategy | null;
  };
  'run.claimed': { workerId: string; leaseEpoch: number; attempt: number };
  /**
   * v2 adds `spanId`. `traceId`/`spanId`: the run's trace root — the `agent.run` span of its first
   * traced attempt, kept by every later attempt (ADR 0015); null when tracing is off.
   */
  'run.started': { attempt: number; deadlineAt: string | null; traceId: string | null; spanId?: string | null };
  /** The principal's trajectory-export consent as evaluated at the run's first start (plan §31, ADR 0016). */
  'run.consent_stamped': {
    principalId: string;
    trajectoryExport: 'granted' | 'withdrawn' | 'absent';
    consentVersion: number | null;
  };
  'run.released': { workerId: string; reason: string };
  'run.checkpointed': { checkpointVersion: number; step: number };
  'run.cancel_requested': { reason: string | null };
  /**
   * A newer message of the session asked the running run to stop at its next safe point
   * (`multitask_strategy: interrupt`, issue 33); `byRunId` is that message's run.
   */
  'run.interrupt_requested': { byRunId: string; mode: InterruptMode; reason: string | null };
  /** The run ended `interrupted`: stopped by a newer message (`byRunId`); its partial work stays in the log. */
  'run.interrupted': { byRunId: string; mode: InterruptMode; reason: string | null };
  'run.rolled_back': { byRunId: string; reason: string | null };
  'run.waiting_for_approval': { approvalId: string };
  'run.waiting_for_user': { questionId: string; question: string };
  'run.resumed': { reason: string };
  /**
   * The parent waits for the child runs its `delegate.run` call materialized (plan §27.6, ADR 0037);
   * written with the children's sessions and runs in one transaction.
   */
  'run.waiting_for_children': { invocationId: string; children: { runId: string; sessionId: string }[] };
  /**
   * A child run's origin, right after its `run.queued` in its own (dedicated) session: the parent,
   * the brief it runs, its tool subset and scopes (each within the parent's), and its deadline (no
   * later than the parent's).
   */
  'run.delegated': {
    parentRunId: string;
    parentSessionId: string;
    invocationId: string;
    briefIndex: number;
    tools: string[];
    scopes: string[];
    deadlineAt: string | null;
    /** The parent's span when it delegated: the child's own trace links to it (ADR 0015); null with tracing off. */
    parentTrace: { traceId: string; spanId: string } | null;
  };
  /** Every child is terminal: their usage joins the parent's (plan §6.5: additive fan-out), before its `run.resumed`. */
  'run.children_joined': {
    invocationId: string;
    children: { runId: string; status: 'completed' | 'failed' | 'cancelled' | 'interrupted'; usage: RunUsage }[];
  };
  /**
   * Consensus mode (ADR 0047): a round of child runs without tools, one per sample — the engines'
   * (round 1, then re-samples of failed engines with a varied framing) or the synthesizer's — written
   * with the children's sessions and runs and the parent's `run.waiting_for_children` (`roundId` is
   * its `invocationId`).
   */
  'consensus.round_started': {
    roundId: string;
    round: number;
    role: 'engine' | 'synthesizer';
    question: string;
    quorum: number;
    samples: { slot: number; engine: string; attempt: number; runId: string; sessionId: string }[];
  };
  /** An engine's child run completed: its answer is one proposal (untrusted model output), at the join. */
  'consensus.proposal_received': {
    roundId: string;
    slot: number;
    engine: string;
    attempt: number;
    runId: string;
    sessionId: string;
    text: string;
  };
  /** An engine's (or the synthesizer's) child run ended without an answer, at the join. */
  'consensus.proposal_failed': {
    roundId: string;
    role: 'engine' | 'synthesizer';
    slot: number;
    engine: string;
    attempt: number;
    runId: string;
    status: 'completed' | 'failed' | 'cancelled' | 'interrupted';
    error: string;
  };
  /** The synthesizer's child run answered: the one answer the agent delivers, from the proposals `proposals` (run ids). */
  'consensus.synthesized': {
    roundId: string;
    runId: string;
    sessionId: string;
    synthesizer: string;
    text: string;
    proposals: string[];
  };
  /** v2: `scheduleId` — the run's schedule (from its `run.queued` v4), written only for a scheduled run (issue 31). */
  'run.completed': { messageId: string | null; scheduleId?: string | null };
  'run.failed': { reason: FailureReason; message: string; errorCode: string | null; scheduleId?: string | null };
  'run.cancelled': { reason: string | null };
  'model.request.started': {
    modelCallId: string;
    step: number;
    attempt: number;
    provider: string;
    model: string;
    prefixHash: string;
    /**
     * v2: the provider profile the call was routed by, its declared version and the provider
     * registry fingerprint (`r<version>-<hash>`); null for the offline providers and for v1 events.
     */
    profileName: string | null;
    profileVersion: number | null;
    registryVersion: string | null;
    /**
     * v3: the context build behind the request (per-class token counts, prefix epoch, compactions);
     * null for v1/v2 events.
     */
    context: ContextBuildRecord | null;
    /**
     * v4: the model this call replaced because it kept answering rate-limit, quota or overloaded
     * errors (a policy's `fallbacks`, ADR 0046), on every call made on a fallback; null otherwise and
     * for v1–v3 events. Optional on append: the run loop always writes it.
     */
    fallbackFrom?: ModelFallbackFrom | null;
  };
  'model.response.completed': {
    modelCallId: string;
    step: number;
    attempt: number;
    stopReason: StopReason;
    usage: TokenUsage;
    cost: string;
    costSource: CostSource;
    toolCalls: { callId: string; name: string }[];
    textLength: number;
    latencyMs: number;
  };
  'model.request.failed': {
    modelCallId: string;
    step: number;
    attempt: number;
    errorCode: string;
    message: string;
    retryable: boolean;
    latencyMs: number;
  };
  'assistant.message.completed': { messageId: string; text: string };
  'tool.call.proposed': {
    invocationId: string;
    step: number;
    callId: string;
    toolName: string;
    toolVersion: string | null;
    arguments: Record<string, unknown>;
    argumentsHash: string;
    idempotencyKey: string;
    /** v2: `bridge` for a call a `sandbox.run_program` program made through the tool bridge (plan §8.5). */
    via?: 'bridge';
    /** v2: the `sandbox.run_program` invocation a bridged call belongs to. */
    parentInvocationId?: string;
  };
  'tool.call.authorized': { invocationId: string; decision: string; reasonCode: string; policyVersion: string };
  'tool.call.denied': { invocationId: string; reasonCode: string; explanation: string; policyVersion: string };
  'tool.call.started': { invocationId: string };
  /** The effect watermark (`effect_sent_at`): written just before a non-idempotent tool starts its effect. */
  'tool.call.effect_started': { invocationId: string };
  /** `trust` is the §11.2 label of the result (v2; v1 results were all internal tools). */
  'tool.call.completed': {
    invocationId: string;
    result: Record<string, unknown>;
    truncated: boolean;
    latencyMs: number;
    trust: ToolResultTrust;
  };
  'tool.call.failed': {
    invocationId: string;
    errorCode: string;
    message: string;
    retryable: boolean;
    latencyMs: number;
  };
  'tool.call.uncertain': { invocationId: string; reason: string };
  /**
   * A running `sandbox.run_program` invocation stopped, before any effect of its own, because a call
   * its program made through the bridge waits for a human (`approvalId`, on `awaitingInvocationId`).
   * It stands authorized again: after the decision the program runs again from the start, its
   * bridged calls answered from their records (docs/sandbox.md).
   */
  'tool.call.suspended': { invocationId: string; reason: string; awaitingInvocationId: string; approvalId: string };
  'approval.requested': {
    approvalId: string;
    /** v2: `tool_call` (policy asked for approval) or `uncertain_review` (retry or fail an UNCERTAIN invocation). */
    actionKind: ApprovalActionKind;
    principalId: string;
    invocationId: string | null;
    toolName: string;
    arguments: Record<string, unknown>;
    actionSummary: string;
    policyReason: string;
    risk: string;
    expiresAt: string | null;
    policyVersion: string;
  };
  /**
   * A pending approval is about to expire (issue 31): appended by the reaper at `expiresAt` minus the
   * policy's `approvals.warn_before_seconds`, once; it triggers the "expires in N minutes" notification.
   * Content-free: the tool's name, never its arguments or the action summary.
   */
  'approval.expiring': {
    approvalId: string;
    principalId: string;
    toolName: string;
    expiresAt: string;
    leadSeconds: number;
  };
  'approval.resolved': {
    approvalId: string;
    decision: 'approved' | 'denied' | 'expired';
    resolvedBy: string;
    reason: string | null;
    /** v2 (issue 33): the human's edit of the call's arguments ("approve with edits"); null otherwise. */
    edit: ApprovalEdit | null;
  };
  /**
   * A compaction checkpoint (plan §11.4): older dialogue replaced, in the model's context only, by a
   * structured summary. The summarised events stay in the log; `sourceSequences` names them.
   */
  'context.compacted': {
    compactionId: string;
    step: number;
    compactor: CompactorKind;
    /** Why a model-assisted compaction fell back to the extractive one; null when it did not. */
    fallbackReason: string | null;
    summary: CompactionSummary;
    workingState: WorkingState;
    sourceSequences: number[];
    /** Every conversation event up to this sequence is covered by the summary (or was superseded). */
    coveredThroughSequence: number;
    tokensBefore: number;
    tokensAfter: number;
  };
  'artifact.created': {
    artifactId: string;
    name: string;
    mediaType: string;
    sha256: string;
    sizeBytes: number;
    /** What produced it (`artifact.export`, `tool_result`, `sandbox.run_command`, …). */
    source: string;
    expiresAt: string | null;
  };
  /** An operator replaced an agent's grant for one MCP server (docs/mcp.md, "Per-agent grants"). */
  'agent.mcp_grant.replaced': {
    agentId: string;
    serverId: string;
    /** v2 adds `rules`: per tool, per argument, a JSON Schema (docs/mcp.md "Argument rules"). */
    grant: {
      default: 'allow' | 'deny';
      tools: Record<string, 'allow' | 'deny'>;
      rules: Record<string, Record<string, Record<string, unknown>>>;
    };
    previous: {
      default: 'allow' | 'deny';
      tools: Record<string, 'allow' | 'deny'>;
      rules: Record<string, Record<string, Record<string, unknown>>>;
    } | null;
    revision: number;
  };
  /**
   * MCP servers managed at run time (ADR 0052, docs/mcp.md "Servers managed at run time"), in the
   * platform's MCP server audit session. `entry` is the server entry exactly as config/mcp.yaml
   * spells it (validated by the same schema; env values are variable names, never values).
   */
  'mcp.server.added': {
    serverId: string;
    entry: Record<string, unknown>;
    revision: number;
  };
  /** A server's settings replaced; `entry` is the whole entry after the change, `changed` its top-level fields. */
  'mcp.server.updated': {
    serverId: string;
    entry: Record<string, unknown>;
    changed: string[];
    /** `yaml` when this is the first change to a server config/mcp.yaml seeded, else `api`. */
    origin: 'yaml' | 'api';
    revision: number;
  };
  /** A server removed (its processes stopped everywhere); `origin` says where it was configured. */
  'mcp.server.removed': {
    serverId: string;
    origin: 'yaml' | 'api';
    revision: number;
  };
  /**
   * Schedules (ADR 0034), each in its own stream (a system session whose id is the schedule's id).
   * `created` and `updated` carry the whole immutable revision; `nextFireAt` is the first firing
   * instant after the change (UTC), null when there is none.
   */
  'schedule.created': {
    revision: number;
    principalId: string;
    definition: ScheduleDefinition;
    nextFireAt: string | null;
  };
  'schedule.updated': {
    revision: number;
    definition: ScheduleDefinition;
    changed: string[];
    nextFireAt: string | null;
  };
  /** `requested` by the owner, or `consecutive_failures` when the scheduler paused it. */
  'schedule.paused': { reason: 'requested' | 'consecutive_failures'; detail: string | null };
  /** Resumed without backfill: `nextFireAt` is the first instant after the resume. */
  'schedule.resumed': { nextFireAt: string | null };
  'schedule.cancelled': { reason: string | null };
  /**
   * An occurrence materialized: its dedicated session and durable run were created in the same
   * transaction. `missedCount`: earlier instants coalesced into this one after downtime.
   */
  'schedule.occurrence.fired': {
    occurrenceId: string;
    nominalAt: string;
    revision: number;
    sessionId: string;
    runId: string;
    missedCount: number;
    nextFireAt: string | null;
  };
  /** No run: the previous run was still active (`skipped_overlap`) or, after downtime, `missed`. */
  'schedule.occurrence.skipped': {
    occurrenceId: string;
    nominalAt: string;
    revision: number;
    status: 'skipped_overlap' | 'missed';
    activeRunId: string | null;
    missedCount: number;
    nextFireAt: string | null;
  };
  /** Failed closed before any session or run existed (authority, agent version, tenant admission). */
  'schedule.occurrence.failed': {
    occurrenceId: string;
    nominalAt: string;
    revision: number;
    reason: OccurrenceFailureReason;
    message: string;
    consecutiveFailures: number;
    nextFireAt: string | null;
    /** v2: the schedule's owner, the recipient of its notification (issue 31); null on v1 events. */
    principalId: string | null;
  };
  /**
   * An external producer posted a notification (`POST /v1/notifications`, admin scope, issue 31): in
   * its own stream (one per tenant and idempotency key). The summary is the producer's, as given.
   */
  'notification.posted': {
    principalId: string;
    kind: string;
    summary: Record<string, string>;
    links: Record<string, string>;
    idempotencyKey: string;
  };
  /** `skill.load` brought one skill's instructions into the run, pinned at this version (docs/skills.md). */
  'run.skill.loaded': {
    invocationId: string;
    name: string;
    version: string;
    sha256: string;
    source: 'package' | 'mcp_prompt';
    missingTools: string[];
  };
}

export type EventType = keyof EventPayloads;
/** Trust labels of plan §11.2 a tool result can carry. */
export type ToolResultTrust = 'internal_tool' | 'user' | 'external_untrusted';
export const TOOL_RESULT_TRUST: readonly ToolResultTrust[] = ['internal_tool', 'user', 'external_untrusted'];
export type ApprovalActionKind = 'tool_call' | 'uncertain_review';
export const APPROVAL_ACTION_KINDS: readonly ApprovalActionKind[] = ['tool_call', 'uncertain_review'];
export type ActorType = 'user' | 'worker' | 'system' | 'admin';

/** An event as the application proposes it; the store assigns sequence, id and time. */
export interface NewEvent<T extends EventType = EventType> {
  readonly type: T;
  readonly runId?: string | null;
  readonly data: EventPayloads[T];
  readonly actorType?: ActorType;
  readonly actorId?: string | null;
  readonly traceId?: string | null;
}

/** A persisted event, always in its newest shape (the read path upcasts). */
export type StoredEvent<T extends EventType = EventType> = {
  [K in T]: {
    readonly id: number;
    readonly sessionId: string;
    readonly runId: string | null;
    readonly sequence: number;
    readonly type: K;
    readonly schemaVersion: number;
    readonly data: EventPayloads[K];
    readonly actorType: ActorType;
    readonly actorId: string | null;
    readonly tenantId: string;
    readonly traceId: string | null;
    readonly createdAt: string;
  };
}[T];

export function isEventOf<T extends EventType>(e: StoredEvent, type: T): e is Extract<StoredEvent, { type: T }> {
  return e.type === type;
}
