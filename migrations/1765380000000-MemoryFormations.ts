import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 30 / ADR 0043: the ledger of end-of-run memory formation (MEMORY_FORMATION). One row per
 * run, claimed before formation and finished after, so a run's memories are formed once even when
 * a worker dies mid-way. Bookkeeping, not a projection: it holds counts and a status, never text
 * of the conversation. The partial index serves the sweep for completed runs.
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
    await q.query(`CREATE INDEX runs_completed_formation_idx ON runs (completed_at) WHERE status = 'completed'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX runs_completed_formation_idx');
    await q.query('DROP TABLE memory_formations');
  }
}
