import type { CreatedSession } from '../application/sessions/create-session';
import type { StoredEvent } from '../domain/events/payloads';
import type { RunRecord } from '../domain/run/run';
import type { SessionRecord } from '../domain/session';
import type { ApprovalRecord, Page, SessionMessage } from '../ports/read-models';
import { snakeCase } from './error-envelope';

/** Domain records as wire JSON (snake_case). Nothing else decides the response shapes. */
export const presentCreatedSession = (s: CreatedSession) => ({
  id: s.id,
  status: s.status,
  agent_id: s.agentId,
  agent_version: s.agentVersion,
});

export const presentSession = (s: SessionRecord) => ({
  id: s.id,
  status: s.status,
  agent_id: s.agentId,
  agent_version: s.agentVersion,
  title: s.title,
  active_run_id: s.activeRunId,
  last_run_id: s.lastRunId,
  last_sequence: s.lastSequence,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

export const presentRun = (r: RunRecord) => ({
  id: r.id,
  session_id: r.sessionId,
  status: r.status,
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
  const res = a.resolution as { decision?: unknown; reason?: unknown } | null;
  return {
    id: a.id,
    run_id: a.runId,
    session_id: a.sessionId,
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
