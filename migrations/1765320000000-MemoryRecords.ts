import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * ADR 0035 (issue 30): long-term memory. `memory_records` is the inline projection of the owners'
 * memory streams (src/domain/projections/memory-record-projection.ts) with a generated full-text
 * vector; `memory_retrievals` the projection of the runs' retrieval traces (`memory.retrieved`).
 *
 * Recall adds pg_trgm similarity when the extension can be created (it ships with PostgreSQL's
 * contrib modules, the embedded server included, and is a trusted extension since PostgreSQL 13).
 * Where it cannot, the migration warns once and recall uses full-text search alone.
 */
export class MemoryRecords1765320000000 implements MigrationInterface {
  name = 'MemoryRecords1765320000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DO $$ BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
      EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pg_trgm is not available (%): memory recall uses full-text search only. Fix: install the PostgreSQL contrib modules and run CREATE EXTENSION pg_trgm as a superuser.', SQLERRM;
      END $$`);
    await q.query(
      `CREATE TABLE memory_records (
         id uuid PRIMARY KEY,
         tenant_id text NOT NULL,
         stream_session_id uuid NOT NULL,
         owner_principal_id text NOT NULL,
         scope text NOT NULL CHECK (scope IN ('principal', 'agent', 'tenant')),
         agent_id text,
         subject text,
         subject_key text,
         statement text,
         statement_key text,
         status text NOT NULL,
         confidence double precision NOT NULL,
         sensitivity text NOT NULL,
         trust text NOT NULL,
         attribution text,
         source_event_ids jsonb NOT NULL,
         source_session_id uuid,
         source_run_id uuid,
         last_invocation_id uuid,
         valid_from timestamptz NOT NULL,
         expires_at timestamptz,
         superseded_by uuid,
         conflicts_with jsonb NOT NULL,
         question text,
         reinforcements integer NOT NULL,
         revision integer NOT NULL,
         created_at timestamptz NOT NULL,
         updated_at timestamptz NOT NULL,
         updated_by text,
         search tsvector GENERATED ALWAYS AS (
           to_tsvector('english'::regconfig, coalesce(subject, '') || ' ' || coalesce(statement, ''))
         ) STORED
       )`,
    );
    // Recall reads one principal's live memories (plus the tenant-wide ones) and ranks them.
    await q.query(
      `CREATE INDEX memory_records_owner ON memory_records (tenant_id, owner_principal_id, updated_at DESC, id DESC)`,
    );
    await q.query(
      `CREATE INDEX memory_records_tenant_wide ON memory_records (tenant_id) WHERE scope = 'tenant' AND status IN ('active', 'tentative', 'conflicting')`,
    );
    // The decider's state: the live memories of a stream about one subject.
    await q.query(`CREATE INDEX memory_records_subject ON memory_records (stream_session_id, subject_key)`);
    await q.query(`CREATE INDEX memory_records_search ON memory_records USING gin (search)`);
    await q.query(
      `COMMENT ON TABLE memory_records IS 'Inline projection (ADR 0035): one row per long-term memory, folded from its owner''s memory stream; a deleted memory keeps its row without text. search is generated.'`,
    );
    await q.query(
      `CREATE TABLE memory_retrievals (
         id uuid PRIMARY KEY,
         tenant_id text NOT NULL,
         session_id uuid NOT NULL,
         run_id uuid,
         purpose text NOT NULL,
         query text,
         invocation_id uuid,
         method text NOT NULL,
         memory_ids jsonb NOT NULL,
         items jsonb NOT NULL,
         blocked jsonb NOT NULL,
         rendered text,
         created_at timestamptz NOT NULL
       )`,
    );
    await q.query(`CREATE INDEX memory_retrievals_memory ON memory_retrievals USING gin (memory_ids jsonb_path_ops)`);
    await q.query(`CREATE INDEX memory_retrievals_run ON memory_retrievals (run_id)`);
    await q.query(
      `CREATE INDEX memory_retrievals_snapshot ON memory_retrievals (session_id) WHERE purpose = 'snapshot'`,
    );
    await q.query(
      `COMMENT ON TABLE memory_retrievals IS 'Inline projection (ADR 0035): one row per memory.retrieved trace (a session snapshot or a memory.recall call), with the memories it used and their scores.'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE memory_retrievals`);
    await q.query(`DROP TABLE memory_records`);
  }
}
