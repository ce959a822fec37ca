import { MIGRATIONS } from '../../ormconfig';
import type { HealthProbe } from '../api/health-probe';
import type { Database } from '../adapters/postgres/database';
import type { SandboxStatus } from './prerequisites';

type Check = Awaited<ReturnType<HealthProbe['check']>>;

/** The sandbox's part of the readiness answer: never a reason to be unready (it is optional). */
function sandboxFields(s: SandboxStatus): Pick<Check, 'sandbox' | 'sandbox_reason' | 'sandbox_fix'> {
  if (s.state === 'available') return { sandbox: 'available' };
  if (s.state === 'disabled') return { sandbox: 'disabled', sandbox_reason: s.reason };
  return { sandbox: 'unavailable', sandbox_reason: s.reason, sandbox_fix: s.fix };
}

/**
 * Readiness: the database answers and every migration is applied. Never touches a model provider.
 * With `sandbox`, also says whether command execution is available here (and if not, why).
 */
export function createHealthProbe(db: Database, sandbox?: () => SandboxStatus): HealthProbe {
  const expected = MIGRATIONS.map((m) => m.name);
  return {
    async check() {
      const optional = sandbox ? sandboxFields(sandbox()) : {};
      return { ...(await checkDatabase()), ...optional };
    },
  };

  async function checkDatabase(): Promise<Check> {
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
  }
}
