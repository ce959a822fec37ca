import { MIGRATIONS } from '../../ormconfig';
import type { HealthProbe } from '../api/health-probe';
import type { Database } from '../adapters/postgres/database';

/** Readiness: the database answers and every migration is applied. Never touches a model provider. */
export function createHealthProbe(db: Database): HealthProbe {
  const expected = MIGRATIONS.map((m) => m.name);
  return {
    async check() {
      try {
        const rows = (await db.query<{ name: string }>('SELECT name FROM typeorm_migrations')).rows;
        const done = new Set(rows.map((r) => r.name));
        const pending = expected.filter((n) => !done.has(n));
        return pending.length === 0
          ? { ok: true, database: 'up', migrations: 'at_head' }
          : {
              ok: false,
              reason: `${pending.length} migration(s) pending`,
              database: 'up',
              migrations: 'behind',
              pending,
            };
      } catch (e) {
        return {
          ok: false,
          reason: `database unavailable: ${e instanceof Error ? e.message : String(e)}`,
          database: 'down',
          migrations: 'unknown',
        };
      }
    },
  };
}
