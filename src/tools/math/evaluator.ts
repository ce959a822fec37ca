import type { ExprNode } from './ast';
import { CalcFailure } from './calc-reason';
import { CalcDecimal } from './decimal';
import { CALC_CONSTANTS, CALC_FUNCTIONS } from './functions';
import { CALC_LIMITS } from './limits';
import { guardedPower } from './power';
import type { BinaryOperator } from './tokens';

/**
 * Evaluates a parsed expression with the calculator's 50-digit Decimal. Every intermediate value
 * is range-checked, so no step can build a number with more than `maxMagnitudeDigits` digits.
 * @throws CalcFailure
 */
export function evaluate(node: ExprNode): CalcDecimal {
  return checkRange(evaluateNode(node));
}

function evaluateNode(node: ExprNode): CalcDecimal {
  switch (node.kind) {
    case 'number':
      return checkRange(new CalcDecimal(node.text));
    case 'constant': {
      const value = CALC_CONSTANTS.get(node.name);
      if (value === undefined) throw new CalcFailure('unknown_identifier', `unknown constant '${node.name}'`);
      return value;
    }
    case 'unary': {
      const operand = evaluateNode(node.operand);
      return node.operator === '-' ? operand.negated() : operand;
    }
    case 'binary':
      return checkRange(applyBinary(node.operator, evaluateNode(node.left), evaluateNode(node.right)));
    case 'call': {
      const fn = CALC_FUNCTIONS.get(node.name);
      if (fn === undefined) throw new CalcFailure('unknown_identifier', `unknown function '${node.name}'`);
      return checkRange(fn.apply(node.args.map(evaluateNode)));
    }
    default: {
      const unreachable: never = node;
      throw new Error(`unhandled node ${String(unreachable)}`);
    }
  }
}

function applyBinary(operator: BinaryOperator, left: CalcDecimal, right: CalcDecimal): CalcDecimal {
  switch (operator) {
    case '+':
      return left.plus(right);
    case '-':
      return left.minus(right);
    case '*':
      return left.times(right);
    case '/':
      if (right.isZero()) throw new CalcFailure('division_by_zero', `division of ${left} by zero`);
      return left.dividedBy(right);
    case '%':
      if (right.isZero()) throw new CalcFailure('division_by_zero', `modulo of ${left} by zero`);
      return left.modulo(right);
    case '^':
      return guardedPower(left, right);
    default: {
      const unreachable: never = operator;
      throw new Error(`unhandled operator ${String(unreachable)}`);
    }
  }
}

/** Refuses non-finite values and values beyond ±`maxMagnitudeDigits` decimal orders of magnitude. */
function checkRange(value: CalcDecimal): CalcDecimal {
  if (!value.isFinite() || (!value.isZero() && Math.abs(value.e) > CALC_LIMITS.maxMagnitudeDigits)) {
    throw new CalcFailure(
      'out_of_range',
      `value is outside the supported range of 1e-${CALC_LIMITS.maxMagnitudeDigits} to 1e${CALC_LIMITS.maxMagnitudeDigits}`,
    );
  }
  return value;
}
