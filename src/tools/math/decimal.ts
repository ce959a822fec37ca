import Decimal from 'decimal.js';
import { CALC_LIMITS } from './limits';

/**
 * The calculator's own Decimal constructor. `clone` with `defaults: true` isolates it from the global
 * Decimal, which other code may configure differently (and which we must never mutate).
 * - 50 significant digits, half-away-from-zero rounding (what people expect from `round`).
 * - `modulo: ROUND_DOWN` gives truncated modulo, the sign of the dividend, like JavaScript `%`.
 * - exponent notation only outside [1e-20, 1e50), so moderate results read as plain numbers.
 */
export const CalcDecimal = Decimal.clone({
  defaults: true,
  precision: CALC_LIMITS.precision,
  rounding: Decimal.ROUND_HALF_UP,
  modulo: Decimal.ROUND_DOWN,
  toExpNeg: -20,
  toExpPos: 50,
});

export type CalcDecimal = InstanceType<typeof CalcDecimal>;
