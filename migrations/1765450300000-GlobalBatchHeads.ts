import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 35 (ADR 0058): the global log's order index holds one entry per append, not one per event.
 * An append is one INSERT in one transaction, its events in sequence order with rising ids, and the
 * appends of one transaction follow each other; so the global order `(transaction_id, id)` is the
 * order of the appends' first events, then of sequence within each append. `batch_events` is the
 * number of events an append wrote, on its first event, and 0 on the others; the partial index
 * `events_global_position_idx` keeps only the first events (a calculator turn: 6 entries instead of
 * 18, ~0.9 kB of WAL less). The default, 1, makes a row inserted alone its own append: rows written
 * before this migration read it (as the old index had them, so no row is rewritten), and so does a
 * row an operator or a fixture inserts by hand. A smallint is enough: an append
 * binds 11 parameters per event, and a statement takes at most 65,535, so no append exceeds 5,957.
 */
export class GlobalBatchHeads1765450300000 implements MigrationInterface {
  name = 'GlobalBatchHeads1765450300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE events ADD COLUMN batch_events smallint NOT NULL DEFAULT 1`);
    await q.query(`DROP INDEX events_global_position_idx`);
    await q.query(
      `CREATE INDEX events_global_position_idx ON events (transaction_id, id) WHERE batch_events > 0`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX events_global_position_idx`);
    await q.query(`CREATE INDEX events_global_position_idx ON events (transaction_id, id)`);
    await q.query(`ALTER TABLE events DROP COLUMN batch_events`);
  }
}
