import { failedWith } from '../../domain/run/outcome';
import type { ModelRoute } from '../model-router';
import { backoffMs, classifyModelError } from '../retry';
import { stopReasonOf } from '../stop-reason';
import { recordModelFailure, type Attempt } from './model-attempt';
import { ended, STOPPED, type LeaseContext, type StepReport } from './run-context';

/**
 * A model call attempt that threw: recorded (`model.request.failed`), then retried after a backoff
 * (null) while the error is retryable, attempts remain and the deadline allows, else the step ends
 * the run. A stop records the abort (not for a fenced or abandoned worker, which writes nothing).
 */
export async function afterModelError(
  ctx: LeaseContext,
  route: ModelRoute,
  a: Attempt,
  error: unknown,
  latencyMs: number,
): Promise<StepReport | null> {
  const { deps, signal, settings } = ctx;
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
  // A provider's retry-after (429/503) is honoured; the deadline check below still bounds it.
  const retryAfter = (error as { details?: { retryAfterMs?: unknown } }).details?.retryAfterMs;
  const wait = Math.max(
    backoffMs(a.attempt, settings.retryBaseMs, settings.retryMaxMs, deps.ids.random()),
    typeof retryAfter === 'number' ? retryAfter : 0,
  );
  const deadlineMs = a.run.deadlineAt ? Date.parse(a.run.deadlineAt) : Infinity;
  if (!c.retryable || a.attempt >= settings.maxModelAttempts || deps.clock.nowMs() + wait >= deadlineMs)
    return ended(failedWith(c.reason, c.message, c.code));
  await deps.clock.sleep(wait, signal).catch(() => undefined);
  return signal.aborted ? STOPPED : null;
}
