/* eslint-disable @typescript-eslint/restrict-template-expressions, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- event payloads are untyped wire JSON, rendered as text */
/** How each persisted event reads in a timeline: one short line, plus details to expand. */
import type { WireEvent } from './api';

export type Kind = 'run' | 'model' | 'tool' | 'approval' | 'message' | 'checkpoint' | 'fail' | 'ok' | 'session';

export interface Line {
  kind: Kind;
  title: string;
  text: string;
  /** Exact JSON shown under the line (tool arguments, results). */
  json?: { label: string; value: unknown; untrusted?: boolean }[];
}

export const json = (v: unknown): string => {
  try {
    return JSON.stringify(v, null, 2) ?? 'null';
  } catch {
    return String(v);
  }
};

const short = (v: unknown, n = 120): string => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s && s.length > n ? `${s.slice(0, n - 1)}…` : (s ?? '');
};

export const time = (iso: string | null | undefined): string => {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString(undefined, { hour12: false });
};

export const dateTime = (iso: string | null | undefined): string => {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { hour12: false });
};

/** Tool names by invocation id, filled as `tool.call.proposed` events go by. */
export type ToolNames = Map<string, string>;

export function describe(e: WireEvent, tools: ToolNames): Line {
  const p = e.payload ?? {};
  return (
    describeConversation(e.type, p) ??
    describeRun(e.type, p) ??
    describeModel(e.type, p) ??
    describeTool(e.type, p, tools) ??
    describeApprovalOrArtifact(e.type, p) ?? { kind: 'run', title: e.type, text: short(p) }
  );
}

type Payload = WireEvent['payload'];

/** Session lifecycle and the messages of the conversation. */
function describeConversation(type: string, p: Payload): Line | null {
  switch (type) {
    case 'session.created':
      return { kind: 'session', title: 'session created', text: `agent ${p.agent_id} v${p.agent_version}` };
    case 'session.deleted':
      return { kind: 'session', title: 'session deleted', text: p.reason ?? '' };
    case 'session.title.changed':
      return { kind: 'session', title: 'session renamed', text: String(p.title ?? '') };
    case 'user.message.created':
      return {
        kind: 'message',
        title: 'user message',
        text: short(((p.content ?? []) as { text?: string }[]).map((c) => c.text ?? '').join(' ')),
      };
    case 'assistant.message.completed':
      return { kind: 'message', title: 'assistant message', text: short(p.text) };
    default:
      return null;
  }
}

/** Run lifecycle events. */
function describeRun(type: string, p: Payload): Line | null {
  switch (type) {
    case 'run.queued':
      return { kind: 'run', title: 'queued', text: `model policy ${p.model_policy}` };
    case 'run.claimed':
      return { kind: 'run', title: 'claimed', text: `worker ${p.worker_id} (attempt ${p.attempt})` };
    case 'run.started':
      return { kind: 'run', title: 'started', text: `attempt ${p.attempt}` };
    case 'run.released':
      return { kind: 'run', title: 'released', text: `${p.worker_id}: ${p.reason}` };
    case 'run.checkpointed':
      return { kind: 'checkpoint', title: 'checkpoint', text: `step ${p.step} (checkpoint ${p.checkpoint_version})` };
    case 'run.cancel_requested':
      return { kind: 'run', title: 'cancel requested', text: p.reason ?? '' };
    case 'run.waiting_for_approval':
      return { kind: 'approval', title: 'waiting for approval', text: String(p.approval_id) };
    case 'run.waiting_for_user':
      return { kind: 'approval', title: 'waiting for you', text: short(p.question) };
    case 'run.resumed':
      return { kind: 'run', title: 'resumed', text: p.reason ?? '' };
    case 'run.completed':
      return { kind: 'ok', title: 'completed', text: '' };
    case 'run.failed':
      return { kind: 'fail', title: 'failed', text: `${p.reason}: ${p.message}` };
    case 'run.cancelled':
      return { kind: 'fail', title: 'cancelled', text: p.reason ?? '' };
    case 'run.interrupt_requested':
      return { kind: 'run', title: 'interrupt requested', text: 'a newer message will run next' };
    case 'run.interrupted':
      return { kind: 'fail', title: 'interrupted', text: 'stopped for a newer message' };
    default:
      return null;
  }
}

/** Model calls and context compaction. */
function describeModel(type: string, p: Payload): Line | null {
  switch (type) {
    case 'model.request.started':
      return {
        kind: 'model',
        title: 'model call',
        text: `step ${p.step} · ${p.provider}:${p.model} · attempt ${p.attempt}${budgetSplit(p.context as ContextRecord | null)}`,
      };
    case 'context.compacted':
      return {
        kind: 'model',
        title: 'context compacted',
        text: `${p.compactor}${p.fallback_reason ? ` (fallback: ${p.fallback_reason})` : ''} · ${(p.source_sequences ?? []).length} events summarised · ${p.tokens_before} → ${p.tokens_after} tokens`,
      };
    case 'model.response.completed': {
      const u = p.usage ?? {};
      const input = (u.uncached_input_tokens ?? 0) + (u.cached_input_tokens ?? 0) + (u.cache_write_tokens ?? 0);
      const calls = ((p.tool_calls ?? []) as { name: string }[]).map((c) => c.name).join(', ');
      return {
        kind: 'model',
        title: 'model answered',
        text: `${p.stop_reason}${calls ? ` · ${calls}` : ''} · ${input} in / ${u.output_tokens ?? 0} out · ${p.latency_ms} ms`,
      };
    }
    case 'model.request.failed':
      return {
        kind: 'fail',
        title: 'model call failed',
        text: `${p.error_code}: ${p.message}${p.retryable ? ' (will retry)' : ''}`,
      };
    default:
      return null;
  }
}

/** Tool call lifecycle; a proposal records the tool's name for the events that follow it. */
function describeTool(type: string, p: Payload, tools: ToolNames): Line | null {
  const tool = (id: unknown) => tools.get(String(id)) ?? 'tool';
  switch (type) {
    case 'tool.call.proposed':
      tools.set(String(p.invocation_id), String(p.tool_name));
      return {
        kind: 'tool',
        title: `${p.tool_name}`,
        text: `proposed ${short(p.arguments, 80)}`,
        json: [{ label: 'arguments', value: p.arguments }],
      };
    case 'tool.call.authorized':
      return { kind: 'tool', title: tool(p.invocation_id), text: `authorized: ${p.decision} (${p.reason_code})` };
    case 'tool.call.denied':
      return {
        kind: 'fail',
        title: tool(p.invocation_id),
        text: `denied (${p.reason_code}): ${p.explanation}`,
      };
    case 'tool.call.started':
      return { kind: 'tool', title: tool(p.invocation_id), text: 'started' };
    case 'tool.call.effect_started':
      return { kind: 'tool', title: tool(p.invocation_id), text: 'effect started' };
    case 'tool.call.completed': {
      const untrusted = p.trust === 'external_untrusted';
      return {
        kind: 'tool',
        title: tool(p.invocation_id),
        text: `result ${short(p.result, 80)} · ${p.latency_ms} ms${p.truncated ? ' · truncated' : ''}`,
        json: [{ label: untrusted ? 'result — untrusted content' : `result (${p.trust})`, value: p.result, untrusted }],
      };
    }
    case 'tool.call.failed':
      return { kind: 'fail', title: tool(p.invocation_id), text: `failed ${p.error_code}: ${p.message}` };
    case 'tool.call.uncertain':
      return { kind: 'fail', title: tool(p.invocation_id), text: `uncertain: ${p.reason}` };
    case 'tool.call.suspended':
      return { kind: 'tool', title: tool(p.invocation_id), text: 'paused: a call of its program waits for approval' };
    default:
      return null;
  }
}

/** Approvals and artifacts. */
function describeApprovalOrArtifact(type: string, p: Payload): Line | null {
  switch (type) {
    case 'approval.requested':
      return {
        kind: 'approval',
        title: `approval requested · ${p.tool_name}`,
        text: `${p.action_summary} — ${p.policy_reason}`,
        json: [{ label: 'arguments', value: p.arguments }],
      };
    case 'approval.expiring':
      return { kind: 'approval', title: `approval expiring · ${p.tool_name}`, text: `expires at ${p.expires_at}` };
    case 'approval.resolved':
      return {
        kind: p.decision === 'approved' ? 'ok' : 'fail',
        title: `approval ${p.decision}`,
        text: `by ${p.resolved_by}${p.reason ? `: ${p.reason}` : ''}`,
      };
    case 'artifact.created':
      return { kind: 'tool', title: 'artifact', text: `${p.name} (${p.media_type}, ${p.size_bytes} bytes)` };
    default:
      return null;
  }
}

/** Run status as the latest lifecycle event of the run says it. */
export function statusAfter(type: string, current: string): string {
  switch (type) {
    case 'run.queued':
    case 'run.released':
      return 'queued';
    case 'run.claimed':
    case 'run.started':
    case 'run.resumed':
      return 'running';
    case 'run.waiting_for_approval':
      return 'waiting_for_approval';
    case 'run.waiting_for_user':
      return 'waiting_for_user';
    case 'run.completed':
      return 'completed';
    case 'run.failed':
      return 'failed';
    case 'run.cancelled':
      return 'cancelled';
    case 'run.interrupted':
      return 'interrupted';
    default:
      return current;
  }
}

/** The context budget split of a model call (model.request.started v3 `context`), or ''. */
interface ContextRecord {
  limit: number | null;
  total: number;
  prefix_epoch: number;
  compactions: number;
  tokens?: Record<'platform' | 'agent' | 'tools' | 'working_state' | 'summary' | 'history' | 'reserve_output', number>;
}

function budgetSplit(c: ContextRecord | null | undefined): string {
  if (!c || !c.tokens) return '';
  const t = c.tokens;
  const parts = [
    `platform ${t.platform}`,
    `agent ${t.agent}`,
    `tools ${t.tools}`,
    `state ${t.working_state}`,
    `summary ${t.summary}`,
    `history ${t.history}`,
    `reserve ${t.reserve_output}`,
  ];
  const limit = c.limit === null ? 'no limit' : `of ${c.limit}`;
  const compacted = c.compactions > 0 ? ` · compacted ×${c.compactions}` : '';
  return ` · context ${c.total} ${limit} (${parts.join(' / ')}) · epoch ${c.prefix_epoch}${compacted}`;
}
