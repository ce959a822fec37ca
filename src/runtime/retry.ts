import { ModelPermanentError, ModelProtocolError, ModelTransientError } from '../domain/errors';
import type { FailureReason } from '../domain/run/failure';

/** Retry classification of plan §13: transient and protocol failures are retried, bounded; the rest are not. */
export function classifyModelError(e: unknown): {
  retryable: boolean;
  code: string;
  message: string;
  reason: FailureReason;
} {
  if (e instanceof ModelTransientError)
    return { retryable: true, code: e.code, message: e.message, reason: 'model_transient_exhausted' };
  if (e instanceof ModelProtocolError)
    return { retryable: true, code: e.code, message: e.message, reason: 'model_protocol_error' };
  if (e instanceof ModelPermanentError)
    return { retryable: false, code: e.code, message: e.message, reason: 'model_permanent_error' };
  const message = e instanceof Error ? e.message : String(e);
  return { retryable: false, code: 'internal_error', message, reason: 'internal_error' };
}

/** Exponential backoff with full jitter, capped; `random` comes from the injected IdFactory. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.floor(ceiling / 2 + (random * ceiling) / 2);
}
