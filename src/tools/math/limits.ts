/**
 * Bounds that make every expression a bounded amount of work: an adversarial or runaway input
 * (`9**9**9`, ten thousand characters, a thousand nested parentheses) fails cleanly instead of
 * hanging a worker or overflowing the stack.
 */
export const CALC_LIMITS = {
  /** Matches the tool's inputSchema `maxLength`; checked again because `evaluateExpression` is public. */
  maxExpressionLength: 1000,
  /** Far above any sensible formula; bounds the parser's work independently of the length check. */
  maxTokens: 500,
  /** Parentheses, function calls, unary signs and right-nested powers each count one level. */
  maxNestingDepth: 64,
  /** Largest |log10(result)| a power or exp() may produce; also bounds every intermediate value. */
  maxMagnitudeDigits: 10_000,
  /** Significant digits of every intermediate and final value. */
  precision: 50,
} as const;
