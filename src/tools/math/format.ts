import { CalcDecimal } from './decimal';
import { CALC_LIMITS } from './limits';

/**
 * The canonical text of a result: at most 50 significant digits, no trailing zeros, no `-0`,
 * and exponent notation only outside [1e-20, 1e50) (decimal.js strips trailing zeros itself).
 */
export function formatResult(value: CalcDecimal): string {
  if (value.isZero()) return '0';
  // Literals keep all their digits in decimal.js; the result is rounded like every computed value.
  return value.toSignificantDigits(CALC_LIMITS.precision).toString();
}
