import { CalcFailure, type CalcReason } from './calc-reason';
import { evaluate } from './evaluator';
import { formatResult } from './format';
import { CALC_LIMITS } from './limits';
import { parse } from './parser';
import { tokenize } from './tokenizer';

export type CalcOutcome =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly reason: CalcReason; readonly message: string };

/**
 * Evaluates a formal arithmetic expression exactly to 50 significant digits, without `eval`.
 * Accepts numbers (`12`, `1.5`, `.5`, `1e3`), `+ - * / %` (`%` is modulo with the dividend's sign),
 * `^` and `**` (right-associative; `-2^2` is `-4`), unary signs, parentheses, the functions
 * sqrt, abs, round (optionally with places), floor, ceil, ln, log10, exp, min and max (variadic),
 * and the constants pi and e. Pure and bounded: bad input yields a reason code, never an exception or a hang.
 */
export function evaluateExpression(expression: string): CalcOutcome {
  try {
    if (expression.length > CALC_LIMITS.maxExpressionLength) {
      throw new CalcFailure(
        'expression_too_long',
        `expression is ${expression.length} characters; the limit is ${CALC_LIMITS.maxExpressionLength}`,
      );
    }
    return { ok: true, value: formatResult(evaluate(parse(tokenize(expression)))) };
  } catch (error) {
    if (error instanceof CalcFailure) return { ok: false, reason: error.reason, message: error.message };
    // Anything else is a bug in this module; surfacing it beats a misleading reason code.
    throw error;
  }
}
