import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 33 (ADR 0038): a session may be forked from another (`POST /v1/sessions/{id}/fork`).
 *
 * - `sessions.parent_session_id`, `sessions.forked_at_sequence`: the session a fork was taken from
 *   and the parent sequence its history ends at (`session.forked`); null for other sessions.
 * - `sessions_parent_idx`: a fork tree is read by walking parents up and children down; only forks
 *   have a parent, so the index is partial and costs the other sessions nothing.
 */
export class SessionForks1765410000000 implements MigrationInterface {
  name = 'SessionForks1765410000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN parent_session_id uuid, ADD COLUMN forked_at_sequence bigint`);
    await q.query(
      `CREATE INDEX sessions_parent_idx ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sessions_parent_idx`);
    await q.query(`ALTER TABLE sessions DROP COLUMN parent_session_id, DROP COLUMN forked_at_sequence`);
  }
}
