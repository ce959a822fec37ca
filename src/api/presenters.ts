import type { ConsensusState } from '../domain/deciders/consensus';
import type { CreatedSession } from '../application/sessions/create-session';
import type { ApprovalEdit, StoredEvent } from '../domain/events/payloads';
import type { RunRecord } from '../domain/run/run';
import type { RunUsage } from '../domain/run/usage';
import type { ChildRun } from '../ports/run-store';
import type { SessionRecord } from '../domain/session';
import type { NotificationRecord } from '../ports/notifications';
import type { ApprovalRecord, ForkNode, Page, SessionMessage } from '../ports/read-models';
import { snakeCase } from './error-envelope';

/** Domain records as wire JSON (snake_case). Nothing else decides the response shapes. */
export const presentCreatedSession = (s: CreatedSession) => ({
  id: s.id,
  status: s.status,
  agent_id: s.agentId,
  agent_version: s.agentVersion,
  ...(s.runId === null ? {} : { run_id: s.runId }),
});

export const presentSession = (s: SessionRecord) => ({
  id: s.id,
  status: s.status,
  agent_id: s.agentId,
  agent_version: s.agentVersion,
  title: s.title,
  active_run_id: s.activeRunId,
  queued_run_ids: s.queuedRunIds,
  last_run_id: s.lastRunId,
  last_sequence: s.lastSequence,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
  parent_session_id: s.parentSessionId,
  forked_at_sequence: s.forkedAtSequence,
});

/** A session of a fork tree, with its forks (issue 33). */
export const presentForkNode = (n: ForkNode): Record<string, unknown> => ({
  id: n.id,
  title: n.title,
  status: n.status,
  parent_session_id: n.parentSessionId,
  forked_at_sequence: n.forkedAtSequence,
  created_at: n.createdAt,
  children: n.children.map(presentForkNode),
});

const presentUsage = (u: RunUsage) => ({
  model_calls: u.modelCalls,
  tool_calls: u.toolCalls,
  uncached_input_tokens: u.uncachedInputTokens,
  cached_input_tokens: u.cachedInputTokens,
  cache_write_tokens: u.cacheWriteTokens,
  output_tokens: u.outputTokens,
  reasoning_tokens: u.reasoningTokens,
  cost: u.cost,
});

/** A child run of delegate.run as its parent's run view lists it (ADR 0037). */
export const presentChildRun = (c: ChildRun) => ({
  run_id: c.runId,
  session_id: c.sessionId,
  brief_index: c.briefIndex,
  invocation_id: c.invocationId,
  status: c.status,
  usage: presentUsage(c.usage),
  final_text: c.status === 'completed' ? c.finalText : null,
  failure: c.failure
    ? { reason: c.failure.reason, message: c.failure.message, error_code: c.failure.errorCode ?? null }
    : null,
  artifacts: c.artifactIds,
  created_at: c.createdAt,
});

/** A consensus run's rounds, proposals, failures and synthesis (ADR 0047); null when the run has none. */
export const presentConsensus = (c: ConsensusState | null) =>
  c === null || c.rounds.length === 0
    ? null
    : {
        question: c.rounds[0].question,
        rounds: c.rounds.map((r) => ({
          round: r.round,
          role: r.role,
          samples: r.samples.map((s) => ({
            slot: s.slot,
            engine: s.engine,
            attempt: s.attempt,
            run_id: s.runId,
            session_id: s.sessionId,
          })),
        })),
        proposals: c.proposals.map((p) => ({
          slot: p.slot,
          engine: p.engine,
          attempt: p.attempt,
          run_id: p.runId,
          session_id: p.sessionId,
          text: p.text,
        })),
        failures: c.failures.map((f) => ({
          role: f.role,
          slot: f.slot,
          engine: f.engine,
          attempt: f.attempt,
          run_id: f.runId,
          status: f.status,
          error: f.error,
        })),
        synthesis: c.synthesis
          ? {
              run_id: c.synthesis.runId,
              session_id: c.synthesis.sessionId,
              synthesizer: c.synthesis.synthesizer,
              text: c.synthesis.text,
              proposals: c.synthesis.proposals,
            }
          : null,
      };

export const presentRun = (
  r: RunRecord,
  children: readonly ChildRun[] = [],
  consensus: ConsensusState | null = null,
) => ({
  id: r.id,
  session_id: r.sessionId,
  parent_run_id: r.parentRunId,
  status: r.status,
  // A queued run: how many of its session's runs are ahead of it (0: next to be claimed).
  ...(r.status === 'queued' && r.queuePosition !== null ? { position: r.queuePosition } : {}),
  queued_behind: r.queuedBehind,
  agent_id: r.agentId,
  agent_version: r.agentVersion,
  model_policy: r.modelPolicy,
  step_count: r.stepCount,
  model_call_count: r.modelCallCount,
  tool_call_count: r.toolCallCount,
  usage: {
    uncached_input_tokens: r.usage.uncachedInputTokens,
    cached_input_tokens: r.usage.cachedInputTokens,
    cache_write_tokens: r.usage.cacheWriteTokens,
    output_tokens: r.usage.outputTokens,
    reasoning_tokens: r.usage.reasoningTokens,
  },
  cost: r.usage.cost,
  failure: r.failure
    ? { reason: r.failure.reason, message: r.failure.message, error_code: r.failure.errorCode ?? null }
    : null,
  final_text: r.status === 'completed' ? r.finalText : null,
  cancel_requested_at: r.cancelRequestedAt,
  created_at: r.createdAt,
  started_at: r.startedAt,
  completed_at: r.completedAt,
  // Delegate.run's child runs (plan §27.6); `usage` above includes theirs once they joined.
  children: children.map((c) => ({
    run_id: c.runId,
    session_id: c.sessionId,
    status: c.status,
    usage: presentUsage(c.usage),
  })),
  consensus: presentConsensus(consensus),
});

export const presentMessage = (m: SessionMessage) => ({
  sequence: m.sequence,
  role: m.role,
  message_id: m.messageId,
  run_id: m.runId,
  content: m.content.map((p) =>
    p.type === 'text'
      ? { type: 'text', text: p.text }
      : { type: p.type, artifact_id: p.artifactId, media_type: p.mediaType },
  ),
  created_at: m.createdAt,
});

export const presentApproval = (a: ApprovalRecord) => {
  const req = a.request as { toolName?: unknown; arguments?: unknown; actionSummary?: unknown; policyReason?: unknown };
  const res = a.resolution as { decision?: unknown; reason?: unknown; edit?: ApprovalEdit | null } | null;
  const edit = res?.edit ?? null;
  return {
    id: a.id,
    run_id: a.runId,
    session_id: a.sessionId,
    // Whose run it is: an approver (approvals.review) sees every principal's approvals of its tenant.
    principal_id: a.principalId,
    status: a.status,
    action_kind: a.actionKind,
    risk: a.risk,
    tool_name: req.toolName ?? null,
    arguments: req.arguments ?? null,
    action_summary: req.actionSummary ?? null,
    policy_reason: req.policyReason ?? null,
    tool_invocation_id: a.toolInvocationId,
    decision: res?.decision ?? null,
    reason: res?.reason ?? null,
    // Approve with edits (issue 33): what ran instead of `arguments`, both hashes and the editor.
    edit: edit
      ? {
          arguments: edit.editedArguments,
          original_arguments_hash: edit.originalArgumentsHash,
          edited_arguments_hash: edit.editedArgumentsHash,
          edited_by: edit.editedBy,
        }
      : null,
    policy_version: a.policyVersion,
    expires_at: a.expiresAt,
    created_at: a.createdAt,
    resolved_at: a.resolvedAt,
    resolved_by: a.resolvedBy,
  };
};

export const presentPage = <T, U>(page: Page<T>, fn: (t: T) => U) => ({
  items: page.items.map(fn),
  next_cursor: page.nextCursor,
});

/** Keys whose values are opaque data (tool arguments and results, metadata): their keys are left as they are. */
const OPAQUE = new Set(['arguments', 'result', 'metadata', 'request']);

function snakePayload(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return Array.isArray(v) ? v.map(snakePayload) : v;
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>).map(([k, x]) => [snakeCase(k), OPAQUE.has(k) ? x : snakePayload(x)]),
  );
}

/** The `data:` of an SSE frame. */
export const presentEvent = (e: StoredEvent) => ({
  type: e.type,
  sequence: e.sequence,
  run_id: e.runId,
  created_at: e.createdAt,
  payload: snakePayload(e.data),
});

/** A notification on the wire (the inbox, its stream and the dashboard's bell). */
export function presentNotification(n: NotificationRecord) {
  return {
    id: n.id,
    kind: n.kind,
    dedupe_key: n.dedupeKey,
    session_id: n.sessionId,
    run_id: n.runId,
    subject_id: n.subjectId,
    summary: n.summary,
    links: n.links,
    created_at: n.createdAt,
    read_at: n.readAt,
    // Only for a recipient whose preference is `content: full`; absent (content-free) otherwise.
    ...(n.content ? { content: n.content } : {}),
  };
}
