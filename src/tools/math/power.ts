import { CalcFailure } from './calc-reason';
import { CalcDecimal } from './decimal';
import { CALC_LIMITS } from './limits';

const LOG10_E = CalcDecimal.log10(CalcDecimal.exp(1));

/**
 * `base ^ exponent`, refused before any big computation when the result would have more than
 * `CALC_LIMITS.maxMagnitudeDigits` digits (either way from the decimal point). The estimate
 * |exponent * log10(|base|)| is the result's order of magnitude and costs one 50-digit log,
 * so `9**9**9` fails in microseconds instead of computing a 370-million-digit number.
 * @throws CalcFailure
 */
export function guardedPower(base: CalcDecimal, exponent: CalcDecimal): CalcDecimal {
  if (base.isZero()) {
    // 0^negative is 1/0; say so rather than reporting an overflow.
    if (exponent.isNegative() && !exponent.isZero()) {
      throw new CalcFailure('division_by_zero', `0 raised to negative power ${exponent}`);
    }
    return base.pow(exponent);
  }
  if (base.isNegative() && !exponent.isInteger()) {
    throw new CalcFailure(
      'fractional_power_of_negative',
      `negative base ${base} with non-integer exponent ${exponent} has no real result`,
    );
  }
  const magnitude = exponent.times(base.abs().log(10)).abs();
  if (magnitude.greaterThan(CALC_LIMITS.maxMagnitudeDigits)) {
    throw new CalcFailure(
      'power_too_large',
      `${base} ^ ${exponent} would have about ${describeMagnitude(magnitude)} digits (limit ${CALC_LIMITS.maxMagnitudeDigits})`,
    );
  }
  return base.pow(exponent);
}

/**
 * `e ^ x` with the same magnitude guard as `guardedPower` (exp(100000) is as big as any power).
 * @throws CalcFailure
 */
export function guardedExp(x: CalcDecimal): CalcDecimal {
  const magnitude = x.times(LOG10_E).abs();
  if (magnitude.greaterThan(CALC_LIMITS.maxMagnitudeDigits)) {
    throw new CalcFailure(
      'power_too_large',
      `exp(${x}) would have about ${describeMagnitude(magnitude)} digits (limit ${CALC_LIMITS.maxMagnitudeDigits})`,
    );
  }
  return x.exp();
}

/** Keeps messages short: a 9000-digit magnitude is reported as `1.00e+9000`, not spelled out. */
function describeMagnitude(magnitude: CalcDecimal): string {
  return magnitude.lessThan(1e15) ? magnitude.toFixed(0) : magnitude.toExponential(2);
}
