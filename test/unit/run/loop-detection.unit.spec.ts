import { LOOP_THRESHOLD, loopDetected, repeatsWithoutNewEvidence } from '../../../src/domain/run/loop-detection';

const ok = (result: unknown) => ({ status: 'succeeded', result });

describe('loop detection (pure)', () => {
  it('three identical answers to the identical call are a loop', () => {
    expect(LOOP_THRESHOLD).toBe(3);
    expect(repeatsWithoutNewEvidence([ok({ v: 1 }), ok({ v: 1 })])).toBe(false);
    expect(repeatsWithoutNewEvidence([ok({ v: 1 }), ok({ v: 1 }), ok({ v: 1 })])).toBe(true);
  });

  it('a different answer is new evidence', () => {
    expect(repeatsWithoutNewEvidence([ok({ v: 1 }), ok({ v: 2 }), ok({ v: 1 })])).toBe(false);
  });

  it('only succeeded calls count', () => {
    const failed = { status: 'failed', result: null };
    expect(repeatsWithoutNewEvidence([ok(1), failed, ok(1), failed])).toBe(false);
    expect(repeatsWithoutNewEvidence([ok(1), failed, ok(1), ok(1)])).toBe(true);
  });

  it('the threshold is a parameter', () => {
    expect(repeatsWithoutNewEvidence([ok(1)], 1)).toBe(true);
    expect(repeatsWithoutNewEvidence([], 1)).toBe(false);
  });

  it('fails the run naming the tool', () => {
    expect(loopDetected('calculator.evaluate')).toEqual({
      kind: 'failed',
      reason: 'loop_detected',
      message: 'the model repeated the identical call calculator.evaluate without new evidence',
      errorCode: 'loop_detected',
    });
  });
});
