/**
 * Why an expression was refused. Each reason is a stable wire code: the tool reports it as
 * `calc_<reason>` so a model (or a human reading the event log) can tell a typo from a math error.
 */
export type CalcReason =
  | 'empty_expression'
  | 'expression_too_long'
  | 'too_many_tokens'
  | 'nesting_too_deep'
  | 'invalid_character'
  | 'invalid_number'
  | 'unbalanced_parentheses'
  | 'unexpected_token'
  | 'unexpected_end'
  | 'trailing_input'
  | 'unknown_identifier'
  | 'wrong_arity'
  | 'invalid_argument'
  | 'division_by_zero'
  | 'sqrt_of_negative'
  | 'log_of_non_positive'
  | 'fractional_power_of_negative'
  | 'power_too_large'
  | 'out_of_range';

/** Every reason, in declaration order (handy for documentation and exhaustive tests). */
export const CALC_REASONS: readonly CalcReason[] = [
  'empty_expression',
  'expression_too_long',
  'too_many_tokens',
  'nesting_too_deep',
  'invalid_character',
  'invalid_number',
  'unbalanced_parentheses',
  'unexpected_token',
  'unexpected_end',
  'trailing_input',
  'unknown_identifier',
  'wrong_arity',
  'invalid_argument',
  'division_by_zero',
  'sqrt_of_negative',
  'log_of_non_positive',
  'fractional_power_of_negative',
  'power_too_large',
  'out_of_range',
];

/**
 * Thrown inside the tokenizer, parser and evaluator and caught by `evaluateExpression`:
 * exceptions keep the recursive-descent code readable, and they never escape the module.
 */
export class CalcFailure extends Error {
  constructor(
    readonly reason: CalcReason,
    message: string,
  ) {
    super(message);
    this.name = 'CalcFailure';
  }
}
