import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 13 (ADR 0023): the read-model generation is the file node of an empty marker table.
 *
 * Every append checks that the projection rows it folded were read in the current read-model
 * generation (a repair rewrites rows without an append; rows cached before it must not be written
 * back after it). That was `max(rebuilt_at)` of `projection_watermarks`: a relation every append
 * opened, locked and scanned (~10 µs of backend time, 2–3% of a single-event append). A repair now
 * also `TRUNCATE`s `read_model_generation`, which gives the table a new file node, and the check
 * reads `pg_relation_filenode('read_model_generation')`: a lookup in the backend's catalog cache,
 * with no relation opened or locked. The table never holds a row; it has no columns.
 */
export class ReadModelGeneration1764800200000 implements MigrationInterface {
  name = 'ReadModelGeneration1764800200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE read_model_generation ()`);
    await q.query(
      `COMMENT ON TABLE read_model_generation IS 'Marker, never holds rows: a projection repair TRUNCATEs it, and its new file node (pg_relation_filenode) is the read-model generation that every append checks (ADR 0023).'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE read_model_generation`);
  }
}
