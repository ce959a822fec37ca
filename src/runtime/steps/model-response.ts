import type { ModelTurn } from '../../domain/model/model-events';
import type { CheckpointState } from '../../domain/run/checkpoint';
import { priceModelCall } from '../../domain/run/usage';
import { isPureComputation } from '../../domain/tools/tool-spec';
import type { ModelRoute } from '../model-router';
import { decideModelCall } from './events';
import type { Attempt } from './model-attempt';
import { observed, type LeaseContext, type PreparedRun, type StepReport } from './run-context';

/** How long the run loop waits for a provider usage API before pricing from the next source. */
const USAGE_API_TIMEOUT_MS = 5_000;

/** A checkpoint state of the run at `step` (the loop's only shape of it). */
export function checkpointState(
  step: number,
  phase: CheckpointState['phase'],
  fromSequence: number,
  pending: Pick<CheckpointState, 'pendingToolCalls' | 'malformedToolCalls'> = {
    pendingToolCalls: [],
    malformedToolCalls: [],
  },
  continuation: CheckpointState['providerContinuation'] = null,
): CheckpointState {
  return {
    schema: 1,
    step,
    phase,
    pendingToolCalls: pending.pendingToolCalls,
    malformedToolCalls: pending.malformedToolCalls,
    providerContinuation: continuation,
    conversationRange: { fromSequence },
  };
}

/**
 * A model call answered: priced (plan §6.5), logged, and handed to the journal as
 * `model.response.completed` with its `model_completed` checkpoint (which holds the proposed calls).
 * Reports the response and the run row its budgets are judged on.
 */
export async function recordResponse(
  ctx: LeaseContext,
  prep: PreparedRun,
  a: Attempt,
  turn: ModelTurn,
  latencyMs: number,
): Promise<StepReport> {
  const { deps, claim, signal } = ctx;
  // The model that answered (a fallback's, ADR 0046) prices the call.
  const route = prep.models.active;
  // Plan §6.5 precedence: provider-reported cost > provider usage API > catalog price >
  // pricing snapshot > configured override (the last three resolved by the router) > free.
  const usageApiCost = turn.providerCost === undefined ? await usageApiCostOf(ctx, route, turn, a) : null;
  const priced = priceModelCall(
    turn.usage,
    { providerResponse: turn.providerCost, providerUsageApi: usageApiCost },
    route.billing,
  );
  const continues = turn.toolCalls.length > 0 || turn.malformedToolCalls.length > 0;
  deps.log.debug('model call completed', {
    runId: claim.runId,
    provider: route.model.provider,
    model: route.model.model,
    profileVersion: route.model.profileVersion ?? null,
    step: a.step,
    attempt: a.attempt,
    stopReason: turn.stopReason,
    toolCalls: turn.toolCalls.length,
    usage: turn.usage,
    cost: priced.cost,
    costSource: priced.costSource,
    latencyMs,
  });
  const response = {
    modelCallId: a.modelCallId,
    step: a.step,
    attempt: a.attempt,
    stopReason: turn.stopReason,
    usage: turn.usage,
    cost: priced.cost,
    costSource: priced.costSource,
    toolCalls: turn.toolCalls.map((c) => ({ callId: c.callId, name: c.name })),
    textLength: turn.text.length,
    latencyMs,
  };
  const { events } = decideModelCall(a.call, claim.runId, { kind: 'RecordModelResponse', response });
  // Kept only while the tool loop goes on; a final answer ends the loop and drops it.
  const reasoning =
    continues && turn.reasoningItems.length ? { provider: route.model.provider, items: turn.reasoningItems } : null;
  const pending = { pendingToolCalls: turn.toolCalls, malformedToolCalls: turn.malformedToolCalls };
  const state = checkpointState(a.step, 'model_completed', prep.firstSequence, pending, reasoning);
  // Tool calls that are all pure computations (the calculator, the clock) need no durable point
  // before the next model call's start (ADR 0013, session 8): the journal decides what that means.
  const pureOnly =
    continues &&
    turn.malformedToolCalls.length === 0 &&
    turn.toolCalls.every((c) => {
      const spec = deps.registry.get(c.name)?.spec;
      return spec !== undefined && isPureComputation(spec);
    });
  const run = await ctx.journal.recordResponse(events, response, state, {
    continues,
    pureOnly,
    stopping: signal.aborted,
  });
  const calls = continues ? { calls: turn.toolCalls, malformed: turn.malformedToolCalls } : null;
  return observed({ kind: 'model_responded', text: turn.text, pending: calls }, run);
}

/**
 * The cost from the provider's usage API (plan §6.5 step 2), when its adapter implements the
 * hook (none does yet: it needs a network call per provider). Bounded to a few seconds and never
 * fatal: a failure, timeout or null leaves the call to the next source of the precedence.
 */
async function usageApiCostOf(
  ctx: LeaseContext,
  route: ModelRoute,
  turn: ModelTurn,
  a: Attempt,
): Promise<string | null> {
  const api = route.provider.usageApi;
  if (!api) return null;
  const attempt = {
    attemptId: a.attemptId,
    attemptNumber: a.attempt,
    deadlineMs: a.run.deadlineAt ? Date.parse(a.run.deadlineAt) : null,
    signal: ctx.signal,
  };
  const signal = AbortSignal.any([attempt.signal, AbortSignal.timeout(USAGE_API_TIMEOUT_MS)]);
  try {
    return await api.costOf(
      { model: route.model, attempt, usage: turn.usage, providerMetadata: turn.providerMetadata },
      signal,
    );
  } catch (e) {
    ctx.deps.log.warn('provider usage API lookup failed; pricing from the next source', {
      provider: route.model.provider,
      model: route.model.model,
      error: e instanceof Error ? e.name : 'unknown',
    });
    return null;
  }
}
