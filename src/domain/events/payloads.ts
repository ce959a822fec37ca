import type { ContentPart } from '../conversation/items';
import type { FailureReason } from '../run/failure';
import type { RunLimits } from '../run/limits';
import type { CostSource, TokenUsage } from '../run/usage';
import type { StopReason } from '../model/model-events';
import type { CompactionSummary, CompactorKind, ContextBuildRecord, WorkingState } from '../context/working-state';

/**
 * The current (newest) payload shape of every persisted event type (plan §6.8). Older shapes live
 * only in upcasters.ts and in the frozen fixtures under test/fixtures/events/.
 * Payloads never carry secrets, raw reasoning or full prompts.
 */
export interface EventPayloads {
  'session.created': {
    agentId: string;
    agentVersion: number;
    principalId: string;
    title: string | null;
    metadata: Record<string, unknown>;
  };
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
  'run.waiting_for_approval': { approvalId: string };
  'run.waiting_for_user': { questionId: string; question: string };
  'run.resumed': { reason: string };
  'run.completed': { messageId: string | null };
  'run.failed': { reason: FailureReason; message: string; errorCode: string | null };
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
  'approval.resolved': {
    approvalId: string;
    decision: 'approved' | 'denied' | 'expired';
    resolvedBy: string;
    reason: string | null;
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
    grant: { default: 'allow' | 'deny'; tools: Record<string, 'allow' | 'deny'> };
    previous: { default: 'allow' | 'deny'; tools: Record<string, 'allow' | 'deny'> } | null;
    revision: number;
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
