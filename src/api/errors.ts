import { AgentError } from '../domain/errors';

/**
 * The four API-specific error codes (everything else is the domain taxonomy of domain/errors.ts,
 * whose codes are already snake_case). They exist only at the HTTP boundary.
 */
export class MalformedRequestError extends AgentError {
  readonly code = 'malformed_request';
}
export class UnsupportedMediaTypeError extends AgentError {
  readonly code = 'unsupported_media_type';
}
export class PayloadTooLargeError extends AgentError {
  readonly code = 'payload_too_large';
}
/** Per-tenant request rate or concurrent-run ceiling reached; `retryAfterSeconds` becomes Retry-After. */
export class RateLimitedError extends AgentError {
  readonly code = 'rate_limited';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    details: Record<string, unknown> = {},
  ) {
    super(message, { ...details, retryAfterSeconds });
  }
}
