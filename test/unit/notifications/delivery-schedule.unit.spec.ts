import { retryDelayMs } from '../../../src/domain/notifications/delivery-schedule';

describe('webhook retry delays', () => {
  it('double per failed attempt, half fixed and half jitter', () => {
    expect(retryDelayMs(1, 0, 1000)).toBe(500);
    expect(retryDelayMs(1, 0.999999, 1000)).toBe(1000);
    expect(retryDelayMs(2, 0, 1000)).toBe(1000);
    expect(retryDelayMs(3, 0.5, 1000)).toBe(3000);
  });

  it('are capped at an hour however many attempts failed', () => {
    const longest = retryDelayMs(40, 0.999999, 1000);
    expect(longest).toBeLessThanOrEqual(3_600_000);
    expect(longest).toBeGreaterThan(3_599_990);
    expect(retryDelayMs(40, 0, 1000)).toBe(1_800_000);
  });
});
