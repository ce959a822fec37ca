/**
 * The typed error hierarchy of plan §13. Every error carries a stable snake_case `code`
 * (the wire vocabulary of the API error envelope) and optional structured `details`.
 * One exception filter maps these to HTTP; the CLI maps them to exit codes.
 */
export abstract class AgentError extends Error {
  abstract readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.details = details;
  }
}

export class ValidationError extends AgentError {
  readonly code = 'validation_error';
}
export class AuthenticationError extends AgentError {
  readonly code = 'authentication_error';
}
export class AuthorizationError extends AgentError {
  readonly code = 'authorization_error';
}
export class NotFoundError extends AgentError {
  readonly code = 'not_found';
}
export class ConflictError extends AgentError {
  readonly code = 'conflict';
}
export class InvalidStateTransition extends AgentError {
  readonly code = 'invalid_state_transition';
}
/** An optimistic append lost a race; retried a bounded number of times and only this error. */
export class ConcurrencyConflict extends AgentError {
  readonly code = 'concurrency_conflict';
}
/** A worker whose lease epoch is no longer current tried to write; it must stop touching the run. */
export class LeaseFencedError extends AgentError {
  readonly code = 'lease_fenced';
}
/**
 * The database could not be reached or answered as a non-primary (a failover in progress: connection
 * refused or cut, the server shutting down or starting, a demoted primary refusing writes). Whether
 * the statement in flight committed is unknown. The API answers 503; a run loop stops touching the
 * run as if fenced and its lease expires, so another worker resumes it from the log (ADR 0031).
 */
export class DatabaseUnavailable extends AgentError {
  readonly code = 'database_unavailable';
}
export class UnknownEventTypeError extends AgentError {
  readonly code = 'unknown_event_type';
}
export class InvalidEventPayloadError extends AgentError {
  readonly code = 'invalid_event_payload';
}
/** A payload matched a credential pattern (plan §5 rule 12): secrets never reach the event log. */
export class SecretInPayloadError extends AgentError {
  readonly code = 'secret_in_payload';
}
/** A stored event could not be decoded (corrupt JSON or unknown schema version). Names the event id. */
export class CorruptEventError extends AgentError {
  readonly code = 'corrupt_event';
}
export class ModelTransientError extends AgentError {
  readonly code = 'model_transient_error';
}
export class ModelPermanentError extends AgentError {
  readonly code = 'model_permanent_error';
}
export class ModelProtocolError extends AgentError {
  readonly code = 'model_protocol_error';
}
export class ToolNotFoundError extends AgentError {
  readonly code = 'tool_not_found';
}
export class ToolValidationError extends AgentError {
  readonly code = 'tool_validation_error';
}
export class ToolPolicyDenied extends AgentError {
  readonly code = 'tool_policy_denied';
}
export class ToolTimeoutError extends AgentError {
  readonly code = 'tool_timeout';
}
export class ToolExecutionError extends AgentError {
  readonly code = 'tool_execution_error';
  constructor(
    message: string,
    readonly retryable: boolean,
    details: Record<string, unknown> = {},
  ) {
    super(message, details);
  }
}
export class ToolResultValidationError extends AgentError {
  readonly code = 'tool_result_validation_error';
}
export class BudgetExceeded extends AgentError {
  readonly code = 'budget_exceeded';
}
export class DeadlineExceeded extends AgentError {
  readonly code = 'deadline_exceeded';
}
export class RunCancelled extends AgentError {
  readonly code = 'run_cancelled';
}
export class LoopDetectedError extends AgentError {
  readonly code = 'loop_detected';
}
export class ConfigurationError extends AgentError {
  readonly code = 'configuration_error';
}
/**
 * The request cannot fit the model's context window even after compaction (plan §11.3): the run
 * fails with `context_overflow` instead of sending a request the provider would refuse with a 400.
 */
export class ContextOverflow extends AgentError {
  readonly code = 'context_overflow';
}
/** The session history could not be turned into a context (a corrupt or unknown event). Names the event. */
export class ContextBuildError extends AgentError {
  readonly code = 'context_build_failed';
}

/** The verifier found a credential the replacer missed: the export is aborted and nothing is written. */
export class TrajectoryVerificationError extends AgentError {
  readonly code = 'export_verification_failed';
}
