import { afterFailedAttempt, fallbackReasonOf } from '../../domain/model/fallback';
import { failedWith } from '../../domain/run/outcome';
import type { ModelChain } from '../model-chain';
import { backoffMs, classifyModelError } from '../retry';
import { stopReasonOf } from '../stop-reason';
import { recordModelFailure, type Attempt } from './model-attempt';
import { ended, STOPPED, type LeaseContext, type StepReport } from './run-context';

/**
 * A model call attempt that threw: recorded (`model.request.failed`), then retried after a backoff
 * (null) while the error is retryable, the model's attempts remain and the deadline allows; a
 * rate-limit, quota or overloaded failure past that moves the run to its policy's next fallback
 * (null, at once; ADR 0046); else the step ends the run. `attemptsOnModel` counts this step's
 * attempts on the active model, this one included. A stop records the abort (not for a fenced or
 * abandoned worker, which writes nothing).
 */
export async function afterModelError(
  ctx: LeaseContext,
  models: ModelChain,
  a: Attempt,
  error: unknown,
  latencyMs: number,
  attemptsOnModel: number,
): Promise<StepReport | null> {
  const { deps, signal, settings } = ctx;
  const route = models.active;
  if (signal.aborted) {
    const why = stopReasonOf(signal);
    if (why !== 'fenced' && why !== 'abandon') {
      const message = `model call aborted (${why ?? 'shutdown'})`;
      await recordModelFailure(ctx, a, { errorCode: 'aborted', message, retryable: true, latencyMs });
    }
    return STOPPED;
  }
  const c = classifyModelError(error);
  // The adapters scrub keys and bearer tokens from provider messages before they get here.
  deps.log.warn('model call failed', {
    runId: ctx.claim.runId,
    provider: route.model.provider,
    model: route.model.model,
    step: a.step,
    attempt: a.attempt,
    errorCode: c.code,
    retryable: c.retryable,
    message: c.message,
    latencyMs,
  });
  await recordModelFailure(ctx, a, { errorCode: c.code, message: c.message, retryable: c.retryable, latencyMs });
  const details = (error as { details?: { retryAfterMs?: unknown; httpStatus?: unknown; providerCode?: unknown } })
    .details;
  // A provider's retry-after (429/503) is honoured; the deadline check below still bounds it.
  const retryAfter = details?.retryAfterMs;
  const wait = Math.max(
    backoffMs(attemptsOnModel, settings.retryBaseMs, settings.retryMaxMs, deps.ids.random()),
    typeof retryAfter === 'number' ? retryAfter : 0,
  );
  const deadlineMs = a.run.deadlineAt ? Date.parse(a.run.deadlineAt) : Infinity;
  const now = deps.clock.nowMs();
  const reason = fallbackReasonOf(details);
  const next = afterFailedAttempt({
    reason,
    retryable: c.retryable,
    attemptsOnModel,
    maxAttempts: settings.maxModelAttempts,
    waitFitsDeadline: now + wait < deadlineMs,
    pastDeadline: now >= deadlineMs,
    hasFallback: models.hasNext(),
  });
  if (next === 'fall_back' && reason !== null) {
    const { moved, skipped } = models.advance(reason, a.step);
    for (const why of skipped) deps.log.warn('fallback model skipped', { runId: ctx.claim.runId, why });
    if (moved) {
      deps.log.info('model fallback', {
        runId: ctx.claim.runId,
        from: `${route.model.provider}:${route.model.model}`,
        to: `${models.active.model.provider}:${models.active.model.model}`,
        reason,
        step: a.step,
      });
      return null;
    }
  }
  if (next !== 'retry') return ended(failedWith(c.reason, c.message, c.code));
  await deps.clock.sleep(wait, signal).catch(() => undefined);
  return signal.aborted ? STOPPED : null;
}
