import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 6 (ADR 0014, the append's write cost): every append writes one events row and updates the
 * session row (and usually the run row), so every index on those paths is paid on every event.
 *
 * - `events_type_created_idx (event_type, created_at)` is dropped: no query of the platform reads
 *   events by type and time (each filters by session, run or global position, which have their own
 *   indexes; checked with EXPLAIN), yet every event paid an index insertion for it.
 * - `sessions` and `runs` get fillfactor 80, so the in-place updates every append makes (the session's
 *   sequence, the run's counters) find room on the row's own page and stay HOT (no index entries
 *   written). The session row's update is only HOT-eligible since the sessions projection v2 stopped
 *   moving the indexed `updated_at` on every event.
 */
export class LeanAppend1764630000000 implements MigrationInterface {
  name = 'LeanAppend1764630000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS events_type_created_idx`);
    await q.query(`ALTER TABLE sessions SET (fillfactor = 80)`);
    await q.query(`ALTER TABLE runs SET (fillfactor = 80)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs RESET (fillfactor)`);
    await q.query(`ALTER TABLE sessions RESET (fillfactor)`);
    await q.query(`CREATE INDEX events_type_created_idx ON events (event_type, created_at)`);
  }
}
