import { combine, accept, type Actor, type Decision } from '../deciders/decider';
import { runDecider, type RunState } from '../deciders/run';
import { toolInvocationDecider, type ToolInvocationState } from '../deciders/tool-invocation';
import type { RunFailure } from '../run/failure';
import type { RunStatus } from '../run/status';
import { isTerminal } from '../run/status';
import type { RunUsage } from '../run/usage';
import { UNTRUSTED_NOTICE } from '../tools/outcomes';

/** A child run as the join reads it (its run row, and the artifacts its run created). */
export interface ChildOutcome {
  readonly runId: string;
  readonly sessionId: string;
  readonly briefIndex: number;
  readonly status: RunStatus;
  readonly finalText: string | null;
  readonly failure: RunFailure | null;
  readonly usage: RunUsage;
  readonly artifactIds: readonly string[];
}

/** The parent waiting for its children, the `delegate.run` invocation, and the children. */
export interface JoinState {
  readonly parent: RunState;
  readonly invocationId: string;
  readonly invocation: ToolInvocationState;
  readonly children: readonly ChildOutcome[];
}

/** How much of a child's final answer the parent receives: a concise result, never a transcript. */
export const MAX_ANSWER_CHARS = 4000;

/**
 * The join (plan §27.6, ADR 0037): once every child is terminal, the `delegate.run` invocation
 * completes with one result per brief — the child's answer, status, usage and artifact references,
 * labelled external and untrusted — the children's usage joins the parent's, and the parent is
 * re-queued. Before that, or for a parent no longer waiting (joined already, cancelled), it decides
 * nothing: whoever asks again after the join is a no-op, so the parent resumes exactly once.
 */
export function decideJoin(state: JoinState, actor: Actor): Decision {
  if (state.parent.status !== 'waiting_for_children') return accept();
  if (state.children.length === 0 || state.children.some((c) => !isTerminal(c.status))) return accept();
  const children = [...state.children].sort((a, b) => a.briefIndex - b.briefIndex);
  const runId = state.parent.runId!;
  return combine(
    toolInvocationDecider.decide(
      {
        kind: 'CompleteToolCall',
        runId,
        invocationId: state.invocationId,
        actor,
        result: { trust: 'external_untrusted', notice: UNTRUSTED_NOTICE, data: { results: children.map(resultOf) } },
        truncated: false,
        latencyMs: 0,
        trust: 'external_untrusted',
      },
      state.invocation,
    ),
    runDecider.decide(
      {
        kind: 'JoinChildren',
        runId,
        actor,
        invocationId: state.invocationId,
        children: children.map((c) => ({
          runId: c.runId,
          status: c.status as 'completed' | 'failed' | 'cancelled' | 'interrupted',
          usage: c.usage,
        })),
      },
      state.parent,
    ),
  );
}

/** One brief's result: a failed or cancelled child is an error for that brief, not for the parent. */
export function resultOf(c: ChildOutcome): Record<string, unknown> {
  const answer =
    c.status === 'completed' && c.finalText !== null
      ? c.finalText.length > MAX_ANSWER_CHARS
        ? `${c.finalText.slice(0, MAX_ANSWER_CHARS)}…`
        : c.finalText
      : null;
  return {
    brief: c.briefIndex + 1,
    run_id: c.runId,
    session_id: c.sessionId,
    status: c.status,
    answer,
    error: errorOf(c),
    usage: {
      model_calls: c.usage.modelCalls,
      tool_calls: c.usage.toolCalls,
      input_tokens: c.usage.uncachedInputTokens + c.usage.cachedInputTokens + c.usage.cacheWriteTokens,
      output_tokens: c.usage.outputTokens,
      cost: c.usage.cost,
    },
    artifacts: [...c.artifactIds],
  };
}

function errorOf(c: ChildOutcome): { code: string; message: string } | null {
  if (c.status === 'cancelled') return { code: 'child_cancelled', message: 'the child run was cancelled' };
  if (c.status === 'interrupted')
    return { code: 'child_interrupted', message: 'the child run was interrupted by a newer message in its session' };
  if (c.status === 'failed')
    return {
      code: c.failure?.errorCode ?? c.failure?.reason ?? 'child_failed',
      message: `the child run failed: ${c.failure?.message ?? 'unknown failure'}`,
    };
  return null;
}
