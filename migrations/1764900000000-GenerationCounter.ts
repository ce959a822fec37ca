import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 14 (ADR 0026, superseding ADR 0023): the read-model generation is a plain counter.
 *
 * Every append checks that the projection rows it folded were read in the current read-model
 * generation (a repair rewrites rows without an append; rows cached before it must not be written
 * back after it). `read_model_generation` held no rows and the generation was its file node, which a
 * repair's `TRUNCATE` renewed; it now holds one row whose `generation` every repair increments in
 * its transaction, and the append statement reads it like any row.
 */
export class GenerationCounter1764900000000 implements MigrationInterface {
  name = 'GenerationCounter1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE read_model_generation
         ADD COLUMN one boolean PRIMARY KEY DEFAULT true CHECK (one),
         ADD COLUMN generation bigint NOT NULL DEFAULT 0`,
    );
    await q.query(`INSERT INTO read_model_generation (one, generation) VALUES (true, 0)`);
    await q.query(
      `COMMENT ON TABLE read_model_generation IS 'One row: generation is the read-model generation, incremented by every projection repair in its transaction and checked by every append (ADR 0026).'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM read_model_generation`);
    await q.query(`ALTER TABLE read_model_generation DROP COLUMN generation, DROP COLUMN one`);
    await q.query(
      `COMMENT ON TABLE read_model_generation IS 'Marker, never holds rows: a projection repair TRUNCATEs it, and its new file node (pg_relation_filenode) is the read-model generation that every append checks (ADR 0023).'`,
    );
  }
}
