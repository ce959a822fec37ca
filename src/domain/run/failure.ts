/**
 * Why a terminal FAILED run failed (plan §13): an operator can tell a provider outage
 * from an exhausted budget from a policy denial without reading logs.
 */
export const FAILURE_REASONS = [
  'model_transient_exhausted',
  'model_permanent_error',
  'model_protocol_error',
  'empty_model_turn',
  'max_steps_exceeded',
  'max_model_calls_exceeded',
  'max_tool_calls_exceeded',
  'token_budget_exceeded',
  'cost_budget_exceeded',
  'deadline_exceeded',
  'loop_detected',
  'tool_permanent_failure',
  'crash_allowance_exhausted',
  'approval_expired',
  /** The request cannot fit the model's context window even after compaction (plan §11.3). */
  'context_overflow',
  'internal_error',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export interface RunFailure {
  readonly reason: FailureReason;
  readonly message: string;
  readonly errorCode?: string;
}
