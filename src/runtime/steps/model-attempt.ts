import { withProviderContinuation } from '../../context/context-builder';
import type { BuiltContext } from '../../context/engine';
import { ModelPermanentError } from '../../domain/errors';
import { assembleTurn } from '../../domain/model/assembler';
import type { ModelTurn } from '../../domain/model/model-events';
import { CANCEL_REQUESTED } from '../../domain/run/outcome';
import type { RunRecord } from '../../domain/run/run';
import type { ModelCallState } from '../../domain/deciders/model-call';
import { decideModelCall } from './events';
import { ended, STOPPED, type LeaseContext, type PreparedRun, type StepReport } from './run-context';

/** One model call attempt of a step: its ids, the run row it was decided on and its built request. */
export interface Attempt {
  readonly step: number;
  readonly attempt: number;
  readonly attemptId: string;
  readonly modelCallId: string;
  readonly run: RunRecord;
  /** The model call aggregate's state (`building` until the start is decided). */
  call: ModelCallState;
}

/** Records that an attempt failed or was not made (`model.request.failed`), committed at once. */
export function recordModelFailure(
  ctx: LeaseContext,
  a: Attempt,
  failure: { errorCode: string; message: string; retryable: boolean; latencyMs: number },
): Promise<void> {
  const data = { modelCallId: a.modelCallId, step: a.step, attempt: a.attempt, ...failure };
  const decided = decideModelCall(a.call, ctx.claim.runId, { kind: 'RecordModelFailure', failure: data });
  a.call = decided.state;
  return ctx.journal.commit(decided.events);
}

/**
 * Commits the attempt's `model.request.started` (with the build's events and whatever the journal
 * lets ride with it); null once it is committed, or the report that ends the step when the start was
 * refused (a cancel requested since the lease's last write, or a stop).
 */
export async function startModelCall(
  ctx: LeaseContext,
  prep: PreparedRun,
  a: Attempt,
  built: BuiltContext,
): Promise<StepReport | null> {
  const route = prep.models.active;
  const decided = decideModelCall(a.call, ctx.claim.runId, {
    kind: 'StartModelCall',
    call: {
      modelCallId: a.modelCallId,
      step: a.step,
      attempt: a.attempt,
      provider: route.model.provider,
      model: route.model.model,
      prefixHash: built.request.prefixHash,
      // v2: which provider profile (and registry) this call was routed by; null for fake/demo.
      profileName: route.model.profileVersion === undefined ? null : route.model.provider,
      profileVersion: route.model.profileVersion ?? null,
      registryVersion: route.model.registryVersion ?? null,
      context: built.record,
      // v4: on a fallback (ADR 0046), the model it replaced; null on the policy's own model.
      fallbackFrom: prep.models.fallbackFrom,
    },
  });
  const refused = await ctx.journal.startModelCall(built.events, decided.events, ctx.signal);
  if (refused === 'stopped') return STOPPED;
  if (refused === 'cancelled') return ended(CANCEL_REQUESTED);
  a.call = decided.state;
  // Only a start written without the sequence condition (a lease that knows no sequence yet) can
  // find a cancel request here: the call is recorded as not made.
  if (!ctx.journal.scope.run.cancelRequestedAt) return null;
  const failure = { errorCode: 'aborted', message: 'model call not made (cancel requested)', retryable: false };
  await recordModelFailure(ctx, a, { ...failure, latencyMs: 0 });
  return ended(CANCEL_REQUESTED);
}

/** Streams the call to the provider and assembles the turn; throws what the provider threw. */
export async function invokeModel(
  ctx: LeaseContext,
  prep: PreparedRun,
  a: Attempt,
  built: BuiltContext,
): Promise<ModelTurn> {
  const { deps, claim, signal, journal } = ctx;
  const route = prep.models.active;
  // The active tool loop's provider-opaque continuation rides along only to the provider that made it
  // (plan §10.6), and never to a fallback from a model before it (ADR 0046): that request is rebuilt without it.
  const checkpoint = journal.scope.checkpoint?.state ?? null;
  const since = prep.models.sinceStep;
  const continuation =
    checkpoint && (since === null || checkpoint.step >= since) ? checkpoint.providerContinuation : null;
  const request = withProviderContinuation(built.request, continuation, route.model.provider);
  if (request.tools.length > 0 && !route.capabilities.toolCalling) {
    throw new ModelPermanentError(
      `model "${route.model.model}" of provider "${route.model.provider}" lacks tool_calling, which this agent's tools need`,
      { missing: ['tool_calling'] },
    );
  }
  const deadlineMs = a.run.deadlineAt ? Date.parse(a.run.deadlineAt) : null;
  const options = { attemptId: a.attemptId, attemptNumber: a.attempt, deadlineMs, signal };
  try {
    return await ctx.telemetry.modelInvoke(route.model, { step: a.step, attempt: a.attempt, signal }, (observe) =>
      assembleTurn(
        observe(route.provider.stream(request, route.model, options)),
        // Not awaited: the stream never waits for a preview's NOTIFY (the publisher keeps a run's
        // deltas in order and joins those that arrive while one is being sent).
        (d) => {
          void deps.transient
            .publish({ sessionId: claim.sessionId, runId: claim.runId, kind: d.type, text: d.text })
            .catch(() => undefined);
        },
      ),
    );
  } finally {
    // The preview text the credential scan held back (ADR 0042) goes out, redacted; not awaited either.
    void deps.transient.endOfStream(claim.sessionId, claim.runId).catch(() => undefined);
  }
}
