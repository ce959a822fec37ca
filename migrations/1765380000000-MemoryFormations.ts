import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 30 / ADR 0043: the ledger of end-of-run memory formation (MEMORY_FORMATION). One row per
 * run, claimed before formation and finished after, so a run's memories are formed once even when
 * a worker dies mid-way. Bookkeeping, not a projection: it holds counts and a status, never text
 * of the conversation. The partial index serves the sweep for completed runs.
 *
 * The memory re-ranker (MEMORY_EMBEDDINGS_URL) computes cosine similarity with pgvector when the
 * server has it: the extension is created here when `pg_available_extensions` lists it; otherwise
 * (or without the privilege) the re-ranker computes it in process, the documented fallback.
 */
export class MemoryFormations1765380000000 implements MigrationInterface {
  name = 'MemoryFormations1765380000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE memory_formations (
        tenant_id text NOT NULL,
        run_id uuid NOT NULL,
        status text NOT NULL CHECK (status IN ('claimed', 'formed')),
        attempts integer NOT NULL DEFAULT 1,
        claimed_at timestamptz NOT NULL,
        formed_at timestamptz,
        outcome jsonb,
        PRIMARY KEY (tenant_id, run_id)
      )`);
    await q.query(`
      DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
          CREATE EXTENSION IF NOT EXISTS vector;
        END IF;
      EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pgvector is available but could not be created (%): the memory re-ranker computes cosine similarity in process.', SQLERRM;
      END $$`);
    await q.query(`CREATE INDEX runs_completed_formation_idx ON runs (completed_at) WHERE status = 'completed'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX runs_completed_formation_idx');
    await q.query('DROP TABLE memory_formations');
  }
}
