import { CalcFailure } from './calc-reason';
import { CalcDecimal } from './decimal';
import { guardedExp } from './power';

/** A callable: its arity bounds (`maxArgs` Infinity for variadic) and its implementation. */
interface CalcFunction {
  readonly minArgs: number;
  readonly maxArgs: number;
  readonly signature: string;
  readonly apply: (args: readonly CalcDecimal[]) => CalcDecimal;
}

/** Decimal places `round(x, places)` accepts: beyond the working precision the digits are noise. */
const MAX_ROUND_PLACES = 50;

const unary = (signature: string, apply: (x: CalcDecimal) => CalcDecimal): CalcFunction => ({
  minArgs: 1,
  maxArgs: 1,
  signature,
  apply: (args) => apply(args[0]),
});

/** The functions an expression may call, by exact (lower-case) name. */
export const CALC_FUNCTIONS: ReadonlyMap<string, CalcFunction> = new Map<string, CalcFunction>([
  [
    'sqrt',
    unary('sqrt(x)', (x) => {
      if (x.isNegative() && !x.isZero()) throw new CalcFailure('sqrt_of_negative', `sqrt of negative number ${x}`);
      return x.sqrt();
    }),
  ],
  ['abs', unary('abs(x)', (x) => x.abs())],
  [
    'round',
    {
      minArgs: 1,
      maxArgs: 2,
      signature: 'round(x) or round(x, places)',
      apply: ([x, places]) => x.toDecimalPlaces(places === undefined ? 0 : roundPlaces(places)),
    },
  ],
  ['floor', unary('floor(x)', (x) => x.floor())],
  ['ceil', unary('ceil(x)', (x) => x.ceil())],
  ['ln', unary('ln(x)', (x) => requirePositive('ln', x).ln())],
  ['log10', unary('log10(x)', (x) => requirePositive('log10', x).log(10))],
  ['exp', unary('exp(x)', (x) => guardedExp(x))],
  ['min', { minArgs: 1, maxArgs: Infinity, signature: 'min(x, ...)', apply: (args) => CalcDecimal.min(...args) }],
  ['max', { minArgs: 1, maxArgs: Infinity, signature: 'max(x, ...)', apply: (args) => CalcDecimal.max(...args) }],
]);

/** Named constants, computed once at the calculator's precision. */
export const CALC_CONSTANTS: ReadonlyMap<string, CalcDecimal> = new Map<string, CalcDecimal>([
  ['pi', CalcDecimal.acos(-1)],
  ['e', CalcDecimal.exp(1)],
]);

/** Names listed in "unknown identifier" messages so a model can correct itself in one step. */
export const KNOWN_NAMES = [...CALC_FUNCTIONS.keys(), ...CALC_CONSTANTS.keys()].join(', ');

function requirePositive(name: string, x: CalcDecimal): CalcDecimal {
  if (!x.isPositive() || x.isZero()) {
    throw new CalcFailure('log_of_non_positive', `${name} of non-positive number ${x}`);
  }
  return x;
}

function roundPlaces(places: CalcDecimal): number {
  if (!places.isInteger() || places.isNegative() || places.greaterThan(MAX_ROUND_PLACES)) {
    throw new CalcFailure(
      'invalid_argument',
      `round places must be an integer from 0 to ${MAX_ROUND_PLACES}, got ${places.toString()}`,
    );
  }
  return places.toNumber();
}
