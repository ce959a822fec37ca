import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * ADR 0059: a memory keeps its source events' keys in their session streams, `[id, session_id,
 * sequence]` each, so the memory API reads them by the events' primary key instead of scanning the
 * id BRIN (ADR 0055), whose summary scan grows with the log. Rows written before this have no keys
 * (their `memory.recorded` v1 events recorded ids only, and a rebuild yields [] for them too), so the
 * API still finds those sources by id.
 */
export class MemorySourceKeys1765450400000 implements MigrationInterface {
  name = 'MemorySourceKeys1765450400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE memory_records ADD COLUMN source_events jsonb NOT NULL DEFAULT '[]'::jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE memory_records DROP COLUMN source_events`);
  }
}
