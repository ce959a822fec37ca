import { HttpException } from '@nestjs/common';
import { AgentError } from '../domain/errors';
import { RateLimitedError } from './errors';

/** HTTP status of every error code that may cross the boundary. Anything else is a 500. */
export const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  validation_error: 400,
  malformed_request: 400,
  invalid_event_payload: 400,
  unknown_event_type: 400,
  secret_in_payload: 400,
  authentication_error: 401,
  authorization_error: 403,
  not_found: 404,
  conflict: 409,
  concurrency_conflict: 409,
  invalid_state_transition: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  not_ready: 503,
  // A failover in progress (ADR 0031): nothing was half-written; retry after a second.
  database_unavailable: 503,
  // Stored artifact bytes no longer match their SHA-256 (plan §18.4): a server-side fault, said plainly.
  artifact_integrity_error: 500,
  // The artifact store cannot be used (S3 bucket missing, credentials refused, endpoint down; ADR 0045):
  // the message says which; nothing was written.
  artifact_storage_error: 503,
};

/**
 * Codes that never cross the boundary as themselves: they describe internals (a corrupt row, a
 * fenced worker, a provider), so the client gets a plain internal error and the log gets the rest.
 */
const INTERNAL_CODES = new Set([
  'corrupt_event',
  'lease_fenced',
  'configuration_error',
  'model_transient_error',
  'model_permanent_error',
  'model_protocol_error',
]);

export interface ErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly details: Record<string, unknown>;
    readonly request_id: string;
  };
}

export interface ErrorResponse {
  readonly status: number;
  readonly body: ErrorBody;
  readonly headers: Record<string, string>;
}

export const snakeCase = (k: string): string => k.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/** Wire JSON is snake_case: keys of plain objects are converted recursively, values untouched. */
export function snakeKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(snakeKeys);
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).map(([k, x]) => [snakeCase(k), snakeKeys(x)]),
    );
  }
  return v;
}

const HTTP_CODES: Record<number, string> = {
  400: 'validation_error',
  401: 'authentication_error',
  403: 'authorization_error',
  404: 'not_found',
  405: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** The headers an error's status calls for: when to retry, how to authenticate. */
function headersFor(exception: AgentError): Record<string, string> {
  if (exception instanceof RateLimitedError)
    return { 'Retry-After': String(Math.max(1, Math.ceil(exception.retryAfterSeconds))) };
  if (exception.code === 'authentication_error') return { 'WWW-Authenticate': 'Bearer' };
  // A failover in progress (ADR 0031): the next try usually reaches the new primary.
  if (exception.code === 'database_unavailable') return { 'Retry-After': '1' };
  return {};
}

/** The one mapping from anything thrown to the documented envelope. Never includes a stack trace. */
export function toErrorResponse(exception: unknown, requestId: string): ErrorResponse {
  const headers: Record<string, string> = {};
  const make = (status: number, code: string, message: string, details: Record<string, unknown>): ErrorResponse => ({
    status,
    headers,
    body: { error: { code, message, details: snakeKeys(details) as Record<string, unknown>, request_id: requestId } },
  });
  if (
    exception instanceof AgentError &&
    !INTERNAL_CODES.has(exception.code) &&
    STATUS_BY_CODE[exception.code] !== undefined
  ) {
    Object.assign(headers, headersFor(exception));
    return make(STATUS_BY_CODE[exception.code], exception.code, exception.message, exception.details);
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const body = exception.getResponse();
    if (typeof body === 'object' && body !== null && 'error' in body) {
      const e = (body as { error: { code?: unknown; message?: unknown; details?: unknown } }).error;
      if (e && typeof e === 'object' && typeof e.code === 'string') {
        return make(
          status,
          e.code,
          typeof e.message === 'string' ? e.message : e.code,
          (e.details as Record<string, unknown>) ?? {},
        );
      }
    }
    const raw = typeof body === 'string' ? body : (body as { message?: unknown }).message;
    const message = Array.isArray(raw) ? raw.map(String).join('; ') : typeof raw === 'string' ? raw : exception.message;
    return make(status, HTTP_CODES[status] ?? (status >= 500 ? 'internal_error' : 'http_error'), message, {});
  }
  return make(500, 'internal_error', 'internal error', {});
}
