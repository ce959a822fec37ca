import { RateLimitedError } from '../errors';

/**
 * Per-tenant token bucket on one API process: `perMinute` requests a minute with a burst of the same
 * size. 0 disables it. In-memory by design (a shared limiter would be a database round trip per
 * request); with N API processes a tenant gets at most N times the rate.
 */
export class TenantRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(tenantId: string): void {
    if (this.perMinute <= 0) return;
    const ratePerMs = this.perMinute / 60_000;
    const t = this.now();
    const b = this.buckets.get(tenantId) ?? { tokens: this.perMinute, at: t };
    b.tokens = Math.min(this.perMinute, b.tokens + (t - b.at) * ratePerMs);
    b.at = t;
    this.buckets.set(tenantId, b);
    if (b.tokens < 1) {
      throw new RateLimitedError('too many requests for this tenant; slow down', (1 - b.tokens) / ratePerMs / 1000, {
        limitPerMinute: this.perMinute,
      });
    }
    b.tokens -= 1;
  }
}
