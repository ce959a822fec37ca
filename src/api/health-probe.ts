export const HEALTH_PROBE = Symbol('HealthProbe');

export interface HealthProbe {
  check(): Promise<{
    ok: boolean;
    reason?: string;
    database: 'up' | 'down';
    migrations: 'at_head' | 'behind' | 'unknown';
    pending?: string[];
    /** Optional pieces never fail readiness; they say whether they run, and if not why and the fix. */
    sandbox?: 'available' | 'disabled' | 'unavailable';
    sandbox_reason?: string;
    sandbox_fix?: string;
  }>;
}
