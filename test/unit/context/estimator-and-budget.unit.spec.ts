import { APPROX_ESTIMATOR } from '../../../src/context/approx-estimator';
import { allocate, DEFAULT_CAPS, yieldReserve } from '../../../src/context/budget';
import { encodingForModel, TiktokenEstimators } from '../../../src/adapters/tokenizer/tiktoken-estimator';
import { ContextOverflow } from '../../../src/domain/errors';

const fixed = { platform: 60, agent: 300, tools: 900, workingState: 40, retrieved: 0, summary: 0 };

describe('token estimators', () => {
  it('approximates four ASCII characters per token, rounding up, and one token per non-ASCII character', () => {
    expect(APPROX_ESTIMATOR.count('')).toBe(0);
    expect(APPROX_ESTIMATOR.count('abcd')).toBe(1);
    expect(APPROX_ESTIMATOR.count('abcde')).toBe(2);
    expect(APPROX_ESTIMATOR.count('héé')).toBe(3);
  });

  it('counts exactly with js-tiktoken for OpenAI families and falls back to the approximation elsewhere', () => {
    const estimators = new TiktokenEstimators(APPROX_ESTIMATOR);
    const gpt5 = estimators.forModel('openai', 'gpt-5-mini');
    expect(gpt5.id).toBe('tiktoken:o200k_base');
    expect(gpt5.count('hello world')).toBe(2);
    expect(estimators.forModel('openai', 'gpt-4-turbo').id).toBe('tiktoken:cl100k_base');
    expect(estimators.forModel('openrouter', 'openai/gpt-4o').id).toBe('tiktoken:o200k_base');
    expect(estimators.forModel('anthropic', 'claude-sonnet-4-6')).toBe(APPROX_ESTIMATOR);
    expect(estimators.forModel('openai', 'some-local-model')).toBe(APPROX_ESTIMATOR);
    // The same encoder instance serves every model of the family (loaded once, lazily).
    expect(estimators.forModel('openai', 'gpt-4.1')).toBe(gpt5);
  });

  it('maps model ids to encodings', () => {
    expect(encodingForModel('o3-mini')).toBe('o200k_base');
    expect(encodingForModel('gpt-3.5-turbo')).toBe('cl100k_base');
    expect(encodingForModel('claude-3')).toBeNull();
  });
});

describe('budget allocator', () => {
  it('gives history what the measured fixed classes and the output reserve leave; only history scales', () => {
    const small = allocate(8_000, fixed, 1_000);
    const large = allocate(200_000, fixed, 1_000);
    expect(small.historyTokens).toBe(8_000 - 1_300 - 1_000);
    expect(large.historyTokens).toBe(200_000 - 1_300 - 1_000);
    for (const k of [
      'platformTokens',
      'agentTokens',
      'toolTokens',
      'workingStateTokens',
      'reserveOutputTokens',
    ] as const)
      expect(small[k]).toBe(large[k]);
  });

  it('caps the output reserve absolutely and at a quarter of the window', () => {
    expect(allocate(4_000, fixed, null).reserveOutputTokens).toBe(1_000);
    expect(allocate(1_000_000, fixed, 100_000).reserveOutputTokens).toBe(DEFAULT_CAPS.reserveOutput);
    expect(allocate(1_000_000, fixed, null).reserveOutputTokens).toBe(DEFAULT_CAPS.reserveOutput);
  });

  it('refuses a class over its cap with a typed ContextOverflow naming it', () => {
    expect(() => allocate(1_000_000, { ...fixed, tools: 20_000 }, null)).toThrow(ContextOverflow);
    expect(() => allocate(1_000_000, { ...fixed, tools: 20_000 }, null)).toThrow(
      /"tools" needs 20000 tokens; its cap is 16000/,
    );
  });

  it('refuses a window the fixed classes and the minimum reserve do not fit', () => {
    expect(() => allocate(1_400, fixed, 1_000)).toThrow(ContextOverflow);
  });

  it('lets retrieved context yield first: at most half of what is left after the fixed classes', () => {
    const b = allocate(4_300, { ...fixed, retrieved: 5_000 }, 1_000);
    expect(b.retrievedContextTokens).toBe(1_000);
    expect(b.historyTokens).toBe(1_000);
  });

  it('shrinks the output reserve down to its floor as the last step, then gives up', () => {
    const b = allocate(4_000, fixed, 2_000);
    // A quarter of the window: 1,000 tokens of reserve, 1,700 of history.
    expect([b.reserveOutputTokens, b.historyTokens]).toEqual([1_000, 1_700]);
    expect(yieldReserve(b, 1_700)).toBe(b);
    expect(yieldReserve(b, 2_000)).toMatchObject({ historyTokens: 2_000, reserveOutputTokens: 700 });
    expect(yieldReserve(b, 2_500)).toBeNull();
  });

  it('does not enforce a window a profile does not declare', () => {
    expect(allocate(null, fixed, null).historyTokens).toBe(Number.MAX_SAFE_INTEGER);
  });
});
