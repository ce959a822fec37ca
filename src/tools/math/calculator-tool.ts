import type { ToolResult, ToolSpec } from '../../domain/tools/tool-spec';
import type { Tool } from '../../ports/tool';
import { evaluateExpression } from './evaluate-expression';
import { CALC_LIMITS } from './limits';

const CALCULATOR_SPEC: ToolSpec = {
  name: 'math.calculate',
  version: '1.0.0',
  description:
    'Evaluates a formal arithmetic expression exactly to 50 significant digits and returns the result as a string. ' +
    'Accepts numbers (12, 1.5, 1e3), + - * / % (modulo), ^ or ** (power, right-associative; -2^2 = -4), ' +
    'parentheses, the functions sqrt, abs, round(x[, places]), floor, ceil, ln, log10, exp, min(...), max(...), ' +
    'and the constants pi and e. Words ("twelve", "percent of") and implicit multiplication (2pi) are not accepted.',
  inputSchema: {
    type: 'object',
    properties: {
      expression: { type: 'string', minLength: 1, maxLength: CALC_LIMITS.maxExpressionLength },
    },
    required: ['expression'],
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: {
      expression: { type: 'string' },
      result: { type: 'string' },
    },
    required: ['expression', 'result'],
    additionalProperties: false,
  },
  sideEffect: 'none',
  risk: 'low',
  idempotency: 'read_only',
  requiredScopes: [],
  timeoutSeconds: 5,
  maximumOutputBytes: 4096,
  allowParallel: true,
};

/**
 * The `math.calculate` tool: a pure, bounded calculator over `evaluateExpression`.
 * Failures are `calc_<reason>` and never retryable (the same input fails the same way).
 */
export function createCalculatorTool(): Tool {
  return {
    spec: CALCULATOR_SPEC,
    execute(args: Record<string, unknown>): Promise<ToolResult> {
      const expression = args['expression'];
      // The runtime validated the arguments, but a direct caller may not have.
      if (typeof expression !== 'string') {
        return Promise.resolve({
          ok: false,
          errorCode: 'calc_invalid_argument',
          message: 'expression must be a string',
          retryable: false,
        });
      }
      const outcome = evaluateExpression(expression);
      const result: ToolResult = outcome.ok
        ? { ok: true, output: { expression, result: outcome.value } }
        : { ok: false, errorCode: `calc_${outcome.reason}`, message: outcome.message, retryable: false };
      return Promise.resolve(result);
    },
  };
}
