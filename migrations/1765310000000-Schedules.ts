import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * ADR 0034: `schedules` (one row per schedule, an inline projection of its stream) and
 * `schedule_occurrences` (the insert-only occurrence ledger). The scheduler finds due schedules
 * through `schedules_due`, a partial index on the next firing of active schedules only, so idle,
 * paused and finished schedules cost it nothing. `UNIQUE (schedule_id, nominal_at)` is the
 * ledger's last word on "at most one occurrence per nominal instant".
 */
export class Schedules1765310000000 implements MigrationInterface {
  name = 'Schedules1765310000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE schedules (
         id uuid PRIMARY KEY,
         tenant_id text NOT NULL,
         principal_id text NOT NULL,
         status text NOT NULL,
         revision integer NOT NULL,
         definition jsonb NOT NULL,
         next_fire_at timestamptz,
         last_nominal_at timestamptz,
         last_run_id uuid,
         last_session_id uuid,
         consecutive_failures integer NOT NULL DEFAULT 0,
         occurrence_count integer NOT NULL DEFAULT 0,
         paused_reason text,
         created_at timestamptz NOT NULL,
         updated_at timestamptz NOT NULL
       )`,
    );
    await q.query(`CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE status = 'active'`);
    await q.query(`CREATE INDEX schedules_owner ON schedules (tenant_id, principal_id, created_at DESC, id DESC)`);
    await q.query(
      `CREATE TABLE schedule_occurrences (
         id uuid PRIMARY KEY,
         schedule_id uuid NOT NULL,
         tenant_id text NOT NULL,
         nominal_at timestamptz NOT NULL,
         fired_at timestamptz NOT NULL,
         status text NOT NULL,
         revision integer NOT NULL,
         session_id uuid,
         run_id uuid,
         missed_count integer NOT NULL DEFAULT 0,
         reason text,
         message text,
         CONSTRAINT schedule_occurrences_instant_key UNIQUE (schedule_id, nominal_at)
       )`,
    );
    await q.query(`CREATE INDEX schedule_occurrences_tenant_fired ON schedule_occurrences (tenant_id, fired_at)`);
    // Tenant admission counts a tenant's scheduled runs (priority 200, SCHEDULED_RUN_PRIORITY) only.
    await q.query(`CREATE INDEX runs_scheduled_tenant ON runs (tenant_id, created_at) WHERE priority = 200`);
    await q.query(
      `COMMENT ON TABLE schedules IS 'Inline projection (ADR 0034): one row per schedule, keyed by the id of its stream session.'`,
    );
    await q.query(
      `COMMENT ON TABLE schedule_occurrences IS 'Inline projection (ADR 0034): the occurrence ledger, insert-only, one row per nominal instant.'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_scheduled_tenant`);
    await q.query(`DROP TABLE schedule_occurrences`);
    await q.query(`DROP TABLE schedules`);
  }
}
