import type { ModelFailedEvent, ModelFailureKind } from '../../../domain/model/model-events';

/**
 * Maps provider failures to the three failure kinds of plan §13 (as `failed` events, so every
 * stream still ends with exactly one terminal event):
 *   transient - 408, 409, 429, 5xx (incl. 529 overloaded), timeouts, connection resets, a stream cut short;
 *   permanent - every other 4xx (bad request, authentication, permission, not found, ...);
 *   protocol  - a response that cannot be parsed or breaks the provider's event order.
 * `retry-after-ms` / `retry-after` (seconds or an HTTP date) are carried as `retryAfterMs`.
 * Messages are scrubbed of anything that looks like a credential before they leave the adapter.
 */

export interface HeaderSource {
  get(name: string): string | null;
}

const MAX_MESSAGE = 500;

export function kindForStatus(status: number): ModelFailureKind {
  if (status === 408 || status === 409 || status === 429 || status >= 500) return 'transient';
  return 'permanent';
}

/** Provider error `type`/`code` strings that mean "try again later" when they arrive mid-stream. */
const TRANSIENT_ERROR_TYPES = new Set([
  'overloaded_error',
  'api_error',
  'rate_limit_error',
  'timeout_error',
  'server_error',
  'rate_limit_exceeded',
  'internal_error',
  'service_unavailable',
]);

export function kindForErrorType(type: string | null | undefined): ModelFailureKind {
  return type !== null && type !== undefined && TRANSIENT_ERROR_TYPES.has(type) ? 'transient' : 'permanent';
}

/** Milliseconds to wait from `retry-after-ms` or `retry-after`; undefined when absent or unparsable. */
export function retryAfterMs(headers: HeaderSource | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.ceil(Number(ms));
  const ra = headers.get('retry-after');
  if (ra === null || ra.trim() === '') return undefined;
  const seconds = Number(ra);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const at = Date.parse(ra);
  if (Number.isFinite(at)) return Math.max(0, at - nowMs);
  return undefined;
}

/** Removes credentials (the given secrets, API-key shapes, bearer tokens) and bounds the length. */
export function scrubMessage(message: string, secrets: readonly (string | null | undefined)[] = []): string {
  let m = message;
  for (const s of secrets) if (s && s.length >= 4) m = m.split(s).join('[redacted]');
  m = m
    .replace(/\bsk-[A-Za-z0-9_*.-]{6,}/g, 'sk-[redacted]')
    .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
    .replace(/\b(api[_-]?key|x-api-key|authorization)(["'\s:=]+)[^\s"',}]+/gi, '$1$2[redacted]');
  return m.length > MAX_MESSAGE ? `${m.slice(0, MAX_MESSAGE)}…` : m;
}

export function failed(
  kind: ModelFailureKind,
  message: string,
  extra: { providerCode?: string; retryAfterMs?: number; httpStatus?: number } = {},
): ModelFailedEvent {
  return {
    type: 'failed',
    kind,
    message,
    ...(extra.providerCode !== undefined ? { providerCode: extra.providerCode } : {}),
    ...(extra.retryAfterMs !== undefined ? { retryAfterMs: extra.retryAfterMs } : {}),
    ...(extra.httpStatus !== undefined ? { httpStatus: extra.httpStatus } : {}),
  };
}

/** A provider-neutral description of an SDK error, filled in by each adapter from its SDK's classes. */
export interface SdkErrorInfo {
  readonly status?: number;
  readonly headers?: HeaderSource | null;
  /** Provider error type or code (`rate_limit_error`, `invalid_api_key`, ...). */
  readonly code?: string | null;
  readonly message: string;
  readonly connection?: boolean;
  readonly timeout?: boolean;
  readonly aborted?: boolean;
  /** The response body or an SSE event could not be parsed. */
  readonly malformed?: boolean;
}

export function failureFromSdkError(
  provider: string,
  info: SdkErrorInfo,
  secrets: readonly (string | null | undefined)[],
): ModelFailedEvent {
  const message = scrubMessage(info.message, secrets);
  if (info.aborted) return failed('transient', `${provider}: request aborted`, { providerCode: 'aborted' });
  if (info.timeout)
    return failed('transient', `${provider}: request timed out: ${message}`, { providerCode: 'timeout' });
  if (info.malformed)
    return failed('protocol', `${provider}: malformed response: ${message}`, { providerCode: 'malformed_response' });
  if (info.connection)
    return failed('transient', `${provider}: connection failed: ${message}`, { providerCode: 'connection_error' });
  if (info.status !== undefined) {
    const kind = kindForStatus(info.status);
    const retryAfter = kind === 'transient' ? retryAfterMs(info.headers) : undefined;
    return failed(kind, `${provider}: HTTP ${info.status}: ${message}`, {
      providerCode: info.code ?? `http_${info.status}`,
      httpStatus: info.status,
      ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
    });
  }
  // An error event inside an otherwise successful stream: its type decides.
  return failed(kindForErrorType(info.code), `${provider}: ${message}`, { providerCode: info.code ?? 'stream_error' });
}

/** The message of an error from any realm (Node's fetch errors are not `instanceof Error` under Jest). */
export function errorMessage(error: unknown): string {
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    const e = error as { message: string; cause?: unknown };
    const cause =
      typeof e.cause === 'object' && e.cause !== null ? (e.cause as { message?: unknown }).message : undefined;
    return typeof cause === 'string' && cause !== '' ? `${e.message} (${cause})` : e.message;
  }
  return String(error);
}

const NETWORK_CODES = [
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_SOCKET',
  'ECONNREFUSED',
  'UND_ERR_CLOSED',
  'ETIMEDOUT',
  'ENOTFOUND',
];

/** undici's "terminated" and socket errors when the peer drops the connection mid-body. */
export function isNetworkError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { message?: unknown; code?: unknown; cause?: { code?: unknown } | null };
  const code = e.code ?? e.cause?.code;
  return e.message === 'terminated' || (typeof code === 'string' && NETWORK_CODES.includes(code));
}

/** Errors that are not the SDK's own API errors: JSON parse failures, socket drops, anything else. */
export function otherErrorInfo(error: unknown): SdkErrorInfo {
  const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
  if (name === 'SyntaxError') return { message: errorMessage(error), malformed: true };
  if (isNetworkError(error)) return { message: errorMessage(error), connection: true };
  return { message: errorMessage(error), malformed: true };
}
