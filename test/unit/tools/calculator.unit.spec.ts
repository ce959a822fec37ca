import { CALC_REASONS, createCalculatorTool, evaluateExpression, type CalcReason } from '../../../src/tools/math';
import { toolContext } from './tool-context';

function valueOf(expression: string): string {
  const outcome = evaluateExpression(expression);
  if (!outcome.ok) throw new Error(`expected ${expression} to evaluate, got ${outcome.reason}: ${outcome.message}`);
  return outcome.value;
}

function reasonOf(expression: string): CalcReason {
  const outcome = evaluateExpression(expression);
  if (outcome.ok) throw new Error(`expected ${expression} to fail, got ${outcome.value}`);
  return outcome.reason;
}

/** One representative input per reason; the bounds reasons have dedicated tests below. */
const FAILURES: readonly (readonly [string, CalcReason])[] = [
  ['', 'empty_expression'],
  ['   ', 'empty_expression'],
  ['1 + $', 'invalid_character'],
  ['2 × 3', 'invalid_character'],
  ['1.2.3', 'invalid_number'],
  ['2pi', 'invalid_number'],
  ['1e', 'invalid_number'],
  ['(1 + 2', 'unbalanced_parentheses'],
  ['1 + 2)', 'unbalanced_parentheses'],
  [')(', 'unbalanced_parentheses'],
  ['1 + * 2', 'unexpected_token'],
  ['()', 'unexpected_token'],
  ['(1 2)', 'unexpected_token'],
  ['sqrt + 1', 'unexpected_token'],
  ['1 +', 'unexpected_end'],
  ['sqrt(', 'unbalanced_parentheses'],
  ['2 3', 'trailing_input'],
  ['(1 + 2) 3', 'trailing_input'],
  ['1, 2', 'trailing_input'],
  ['foo + 1', 'unknown_identifier'],
  ['sin(1)', 'unknown_identifier'],
  ['PI', 'unknown_identifier'],
  ['sqrt(1, 2)', 'wrong_arity'],
  ['min()', 'wrong_arity'],
  ['round(1, 0.5)', 'invalid_argument'],
  ['round(1, 51)', 'invalid_argument'],
  ['1 / 0', 'division_by_zero'],
  ['5 % 0', 'division_by_zero'],
  ['0 ^ -1', 'division_by_zero'],
  ['sqrt(-1)', 'sqrt_of_negative'],
  ['ln(0)', 'log_of_non_positive'],
  ['log10(-5)', 'log_of_non_positive'],
  ['(-8) ^ (1/3)', 'fractional_power_of_negative'],
  ['10 ^ 10001', 'power_too_large'],
  ['exp(100000)', 'power_too_large'],
  ['1e99999', 'out_of_range'],
  ['1e9000 * 1e9000', 'out_of_range'],
];
const BOUND_REASONS: readonly CalcReason[] = [
  'expression_too_long',
  'too_many_tokens',
  'nesting_too_deep',
  'power_too_large',
];

describe('evaluateExpression', () => {
  it.each([
    ['17*23', '391'],
    ['(2+3)*4', '20'],
    ['2^10', '1024'],
    ['2**10', '1024'],
    ['0.1+0.2', '0.3'],
    ['10 - 4 - 3', '3'],
    ['100 / 10 / 5', '2'],
    ['7 % 3', '1'],
    ['1e3', '1000'],
    ['2.5E-1 * 4', '1'],
    ['.5 + .5', '1'],
    ['+3', '3'],
    ['2 * -3', '-6'],
    ['--1', '1'],
    ['2^-2', '0.25'],
    ['abs(-4.5)', '4.5'],
    ['floor(-1.5)', '-2'],
    ['ceil(1.2)', '2'],
    ['log10(1000)', '3'],
    ['ln(e)', '1'],
    ['exp(0)', '1'],
    ['sqrt(16)', '4'],
    ['1.50 * 1', '1.5'],
    ['-0', '0'],
  ])('evaluates %s to %s', (expression, expected) => {
    expect(valueOf(expression)).toBe(expected);
  });

  it('treats power as right-associative so 2**3**2 is 2**9', () => {
    expect(valueOf('2**3**2')).toBe('512');
    expect(valueOf('2^3^2')).toBe('512');
  });

  it('binds unary minus looser than power so -2^2 is -(2^2), the textbook convention', () => {
    expect(valueOf('-2^2')).toBe('-4');
    expect(valueOf('(-2)^2')).toBe('4');
    expect(valueOf('-2*3')).toBe('-6');
  });

  it('computes 1/3 to exactly 50 significant digits', () => {
    expect(valueOf('1/3')).toBe(`0.${'3'.repeat(50)}`);
    expect(valueOf('2/3')).toBe(`0.${'6'.repeat(49)}7`);
  });

  it('computes sqrt(2) to 50 significant digits', () => {
    expect(valueOf('sqrt(2)')).toBe('1.4142135623730950488016887242096980785696718753769');
  });

  it('knows pi and e to 50 significant digits', () => {
    expect(valueOf('pi')).toBe('3.1415926535897932384626433832795028841971693993751');
    // e = 2.71828182845904523536028747135266249775724709369995…, which rounds up to …70937 at 50 digits.
    expect(valueOf('e')).toBe('2.7182818284590452353602874713526624977572470937');
  });

  it('accepts any number of arguments to min and max', () => {
    expect(valueOf('min(3, 1, 2)')).toBe('1');
    expect(valueOf('max(3, 1, 2, 10 - 1)')).toBe('9');
    expect(valueOf('min(-1)')).toBe('-1');
  });

  it('rounds half away from zero and optionally to a number of decimal places', () => {
    expect(valueOf('round(2.5)')).toBe('3');
    expect(valueOf('round(-2.5)')).toBe('-3');
    expect(valueOf('round(pi, 4)')).toBe('3.1416');
  });

  it('takes the sign of the dividend for modulo, like JavaScript', () => {
    expect(valueOf('-7 % 3')).toBe('-1');
    expect(valueOf('7 % -3')).toBe('1');
  });

  it('writes moderate magnitudes without exponent notation and huge ones with it', () => {
    expect(valueOf('2^100')).toBe('1267650600228229401496703205376');
    expect(valueOf('0.000001')).toBe('0.000001');
    expect(valueOf('2^200')).toBe('1.6069380442589902755419620923411626025222029937828e+60');
    expect(valueOf('10^10000')).toBe('1e+10000');
  });

  it('rounds a long literal to 50 significant digits', () => {
    expect(valueOf(`1.${'1'.repeat(60)}`)).toBe(`1.${'1'.repeat(49)}`);
  });

  it.each(FAILURES)('refuses %p with reason %s', (expression, reason) => {
    expect(reasonOf(expression)).toBe(reason);
  });

  it('refuses 9**9**9 with the power reason instead of computing a 370-million-digit number', () => {
    const outcome = evaluateExpression('9**9**9');
    expect(outcome).toEqual({ ok: false, reason: 'power_too_large', message: expect.stringContaining('digits') });
  });

  it('refuses an expression longer than 1000 characters before looking at it', () => {
    expect(reasonOf('1+'.repeat(5000))).toBe('expression_too_long');
    expect(reasonOf(`1${'+1'.repeat(499)}`.padEnd(1001, ' '))).toBe('expression_too_long');
  });

  it('refuses an expression with more than 500 tokens even within the length limit', () => {
    expect(reasonOf(`1${'+1'.repeat(300)}`)).toBe('too_many_tokens');
  });

  it('refuses parentheses nested deeper than 64 levels', () => {
    expect(valueOf(`${'('.repeat(63)}1${')'.repeat(63)}`)).toBe('1');
    expect(reasonOf(`${'('.repeat(65)}1${')'.repeat(65)}`)).toBe('nesting_too_deep');
  });

  it('counts chained unary signs and right-nested powers as nesting', () => {
    expect(reasonOf(`${'-'.repeat(65)}1`)).toBe('nesting_too_deep');
    expect(reasonOf(`1${'^1'.repeat(65)}`)).toBe('nesting_too_deep');
  });

  it('reports each failure with a message a model can act on', () => {
    const outcome = evaluateExpression('foo + 1');
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.message).toContain("unknown name 'foo'");
  });

  it('has a failure case for every declared reason', () => {
    // Adding a reason without a representative input fails here.
    const exercised = new Set<CalcReason>([...FAILURES.map(([, reason]) => reason), ...BOUND_REASONS]);
    expect([...exercised].sort()).toEqual([...CALC_REASONS].sort());
  });
});

describe('math.calculate tool', () => {
  const tool = createCalculatorTool();

  it('declares a pure, low-risk, read-only spec', () => {
    expect(tool.spec).toMatchObject({
      name: 'math.calculate',
      version: '1.0.0',
      sideEffect: 'none',
      risk: 'low',
      idempotency: 'read_only',
      requiredScopes: [],
      timeoutSeconds: 5,
      maximumOutputBytes: 4096,
      allowParallel: true,
    });
  });

  it('returns the expression and its result', async () => {
    await expect(tool.execute({ expression: '17*23' }, toolContext())).resolves.toEqual({
      ok: true,
      output: { expression: '17*23', result: '391' },
    });
  });

  it('reports a failure as a non-retryable calc_<reason> error', async () => {
    const result = await tool.execute({ expression: '1/0' }, toolContext());
    expect(result).toEqual({
      ok: false,
      errorCode: 'calc_division_by_zero',
      message: expect.any(String),
      retryable: false,
    });
  });

  it('refuses a non-string expression from a caller that skipped validation', async () => {
    const result = await tool.execute({ expression: 42 }, toolContext());
    expect(result).toMatchObject({ ok: false, errorCode: 'calc_invalid_argument', retryable: false });
  });

  it('keeps its largest output within maximumOutputBytes', async () => {
    const expression = `1${' '.repeat(998)}1`.replace(/ 1$/, '+1');
    const result = await tool.execute({ expression }, toolContext());
    expect(result.ok).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(tool.spec.maximumOutputBytes);
  });
});
