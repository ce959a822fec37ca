import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Trajectory export (plan §31, ADR 0016): per-principal consent, its append-only history, export
 * jobs, and which principals' runs each export contains (so withdrawing consent can delete them).
 * Consent is not an event: events belong to a session stream and consent belongs to a principal.
 * The run's view of consent at its start is stamped on `run.started` (v2) and so is in the log.
 */
export class TrajectoryExport1764610000000 implements MigrationInterface {
  name = 'TrajectoryExport1764610000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE trajectory_consents (
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        status text NOT NULL CHECK (status IN ('granted', 'withdrawn')),
        version integer NOT NULL,
        changed_at timestamptz NOT NULL,
        changed_by text NOT NULL,
        PRIMARY KEY (tenant_id, principal_id)
      )`);
    await q.query(`
      CREATE TABLE trajectory_consent_changes (
        id bigserial PRIMARY KEY,
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        status text NOT NULL,
        version integer NOT NULL,
        changed_at timestamptz NOT NULL,
        changed_by text NOT NULL,
        exports_deleted integer NOT NULL DEFAULT 0
      )`);
    await q.query(`
      CREATE TABLE trajectory_exports (
        id uuid PRIMARY KEY,
        tenant_id text NOT NULL,
        requested_by text NOT NULL,
        filters jsonb NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'deleted')),
        artifact_id uuid,
        summary jsonb,
        error jsonb,
        created_at timestamptz NOT NULL,
        finished_at timestamptz
      )`);
    await q.query(`CREATE INDEX trajectory_exports_tenant_idx ON trajectory_exports (tenant_id, created_at)`);
    await q.query(`
      CREATE TABLE trajectory_export_members (
        export_id uuid NOT NULL REFERENCES trajectory_exports (id),
        tenant_id text NOT NULL,
        principal_id text NOT NULL,
        runs integer NOT NULL,
        PRIMARY KEY (export_id, principal_id)
      )`);
    await q.query(
      `CREATE INDEX trajectory_export_members_principal_idx ON trajectory_export_members (tenant_id, principal_id)`,
    );
    // The export selects runs by their terminal event in global order, per tenant.
    await q.query(`
      CREATE INDEX events_terminal_runs_idx ON events (tenant_id, transaction_id, id)
       WHERE event_type IN ('run.completed', 'run.failed', 'run.cancelled')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX events_terminal_runs_idx`);
    await q.query(`DROP TABLE trajectory_export_members`);
    await q.query(`DROP TABLE trajectory_exports`);
    await q.query(`DROP TABLE trajectory_consent_changes`);
    await q.query(`DROP TABLE trajectory_consents`);
  }
}
