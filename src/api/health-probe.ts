export const HEALTH_PROBE = Symbol('HealthProbe');

export interface HealthProbe {
  check(): Promise<{
    ok: boolean;
    reason?: string;
    database: 'up' | 'down';
    migrations: 'at_head' | 'behind' | 'unknown';
    pending?: string[];
  }>;
}
