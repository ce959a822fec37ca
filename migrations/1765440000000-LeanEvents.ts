import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 35 (ADR 0054): fewer index entries per event and per run update.
 *
 * - `events_run_idx` goes: a run's events are read from its session's stream, from the run's first
 *   sequence (`runs.first_sequence`: its user message's, just before its `run.queued`) to its last
 *   (`runs.last_sequence`), both folded by the run projection v8 and backfilled here, filtered by
 *   `run_id`.
 * - `runs_lease_expires_idx` goes: it made every lease renewal a non-HOT update (the lease is in its
 *   key). The claim finds expired leases among the running runs through `runs_status_created_idx`.
 *
 * Each of these saved one B-tree entry per event or per run update; measured in bench/RESULTS.md.
 */
export class LeanEvents1765440000000 implements MigrationInterface {
  name = 'LeanEvents1765440000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN first_sequence bigint, ADD COLUMN last_sequence bigint`);
    await q.query(
      `UPDATE runs r SET first_sequence = s.first, last_sequence = s.last
         FROM (SELECT e.run_id, min(e.sequence) AS first, max(e.sequence) AS last
                 FROM events e JOIN runs x ON x.id = e.run_id AND x.session_id = e.session_id
                GROUP BY e.run_id) s
        WHERE s.run_id = r.id`,
    );
    await q.query(`DROP INDEX events_run_idx`);
    await q.query(`DROP INDEX runs_lease_expires_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX runs_lease_expires_idx ON runs (lease_expires_at) WHERE status = 'running'`);
    await q.query(`CREATE INDEX events_run_idx ON events (run_id, id)`);
    await q.query(`ALTER TABLE runs DROP COLUMN first_sequence, DROP COLUMN last_sequence`);
  }
}
