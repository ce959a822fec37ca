import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 35 (ADR 0055): one B-tree entry fewer per event, and fewer per run and tool call.
 *
 * - `(session_id, sequence)`, the sequence gate every append already checks, becomes the primary key
 *   (keeping the constraint's name, `events_session_sequence_key`, which the append translates into
 *   a concurrency conflict); `events_pkey` on `id` goes. The few reads of an event by its `id` alone
 *   (the memory API's provenance) go through `events_id_brin`: ids grow with the heap, so a range of
 *   16 pages summarizes them. Only completed ranges are summarized (autosummarize asks for the range
 *   before the one an insert opens; vacuum summarizes whole ranges only), so an insert into the range
 *   being written finds no summary and writes nothing to this index.
 * - `runs_status_created_idx` took an entry on every status change (queued, claimed, ended); its one
 *   reader, the claim's search for expired leases, reads running runs only: `runs_running_idx`.
 * - `tool_invocations_run_idx (run_id, step_number)`: every reader by run goes as well through
 *   `tool_invocations_run_tool_idx`, which leads with `run_id`.
 */
export class EventKeys1765450000000 implements MigrationInterface {
  name = 'EventKeys1765450000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE events DROP CONSTRAINT events_pkey`);
    await q.query(
      `ALTER TABLE events DROP CONSTRAINT events_session_sequence_key,
         ADD CONSTRAINT events_session_sequence_key PRIMARY KEY (session_id, sequence)`,
    );
    await q.query(
      `CREATE INDEX events_id_brin ON events USING brin (id) WITH (pages_per_range = 16, autosummarize = on)`,
    );
    // The build summarizes every range, the partial last one too (on an empty table, the first):
    // each insert into it would then widen its summary, one BRIN record per event until the heap
    // leaves it. Leaving it unsummarized makes inserts write nothing to this index.
    await q.query(
      `SELECT brin_desummarize_range('events_id_brin',
         greatest(pg_relation_size('events') / current_setting('block_size')::bigint - 1, 0))`,
    );
    await q.query(`DROP INDEX runs_status_created_idx`);
    await q.query(`CREATE INDEX runs_running_idx ON runs (priority, created_at) WHERE status = 'running'`);
    await q.query(`DROP INDEX tool_invocations_run_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX tool_invocations_run_idx ON tool_invocations (run_id, step_number)`);
    await q.query(`DROP INDEX runs_running_idx`);
    await q.query(`CREATE INDEX runs_status_created_idx ON runs (status, created_at)`);
    await q.query(`DROP INDEX events_id_brin`);
    await q.query(
      `ALTER TABLE events DROP CONSTRAINT events_session_sequence_key,
         ADD CONSTRAINT events_session_sequence_key UNIQUE (session_id, sequence)`,
    );
    await q.query(`ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id)`);
  }
}
