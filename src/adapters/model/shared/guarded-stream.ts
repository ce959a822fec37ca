import type { ModelAttempt, ModelEvent } from '../../../domain/model/model-events';
import { failed } from './failures';

/**
 * The envelope every SDK adapter runs its stream in. It guarantees the adapter contract whatever the
 * SDK does: exactly one terminal event and nothing after it; the HTTP request is aborted when the
 * attempt's signal fires or its deadline passes (the SDKs end their iterators silently on abort, so
 * the guard turns that into a transient failure); a thrown error becomes a `failed` event through
 * the adapter's own error mapping; a stream that ends without a terminal event is a transient
 * `stream_truncated` failure (the connection was cut).
 */
export async function* guardedStream(
  provider: string,
  attempt: ModelAttempt,
  body: (signal: AbortSignal) => AsyncIterable<ModelEvent>,
  mapError: (error: unknown, signal: AbortSignal) => ModelEvent & { type: 'failed' },
  now: () => number = Date.now,
): AsyncGenerator<ModelEvent> {
  const controller = new AbortController();
  let deadlineHit = false;
  const onAbort = () => controller.abort(attempt.signal?.reason);
  attempt.signal?.addEventListener('abort', onAbort, { once: true });
  if (attempt.signal?.aborted === true) onAbort();
  let timer: NodeJS.Timeout | undefined;
  // setTimeout fires at once for delays past 2^31-1 ms; a deadline that far away is no deadline.
  if (attempt.deadlineMs !== null && attempt.deadlineMs - now() < 2 ** 31 - 1) {
    const remaining = attempt.deadlineMs - now();
    timer = setTimeout(
      () => {
        deadlineHit = true;
        controller.abort(new Error('deadline'));
      },
      Math.max(0, remaining),
    );
  }
  const interrupted = () =>
    deadlineHit
      ? failed('transient', `${provider}: timeout: the attempt deadline passed`, { providerCode: 'timeout' })
      : failed('transient', `${provider}: the attempt was aborted`, { providerCode: 'aborted' });
  try {
    if (controller.signal.aborted) {
      yield interrupted();
      return;
    }
    let terminal = false;
    try {
      for await (const event of body(controller.signal)) {
        if (controller.signal.aborted) break;
        yield event;
        if (event.type === 'completed' || event.type === 'failed') {
          terminal = true;
          break;
        }
      }
    } catch (error) {
      if (controller.signal.aborted) {
        yield interrupted();
        return;
      }
      yield mapError(error, controller.signal);
      return;
    }
    if (terminal) return;
    if (controller.signal.aborted) yield interrupted();
    else
      yield failed('transient', `${provider}: the response stream ended before its final event (connection cut)`, {
        providerCode: 'stream_truncated',
      });
  } finally {
    if (timer) clearTimeout(timer);
    attempt.signal?.removeEventListener('abort', onAbort);
    // Stops the HTTP request if the consumer stopped early (or after a terminal event).
    if (!controller.signal.aborted) controller.abort();
  }
}
