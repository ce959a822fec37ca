import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The artifact store's metadata (plan §15 `artifacts`, §18.4; issue 8). Revision 2 created the
 * table as a placeholder; this revision gives it the shape the filesystem store needs:
 * - `storage_uri` becomes `storage_key`: a key derived from the content's SHA-256 (`sha256/ab/cd/<hex>`),
 *   relative to the store's root, never an absolute path and never shown to a client;
 * - `session_id` and `principal_id` become optional (an export or upload may belong to no session);
 * - `source` (what produced it) and `expires_at` (the sweeper deletes past it) are added;
 * - indexes serve the three reads: a run's artifacts, due expiries, and "is this blob still referenced".
 * The table is empty in every deployment before this revision (nothing wrote it), so no data moves.
 */
export class ArtifactStore1764600000000 implements MigrationInterface {
  name = 'ArtifactStore1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE artifacts RENAME COLUMN storage_uri TO storage_key`);
    await q.query(`
      ALTER TABLE artifacts
        ALTER COLUMN session_id DROP NOT NULL,
        ALTER COLUMN principal_id DROP NOT NULL,
        ADD COLUMN source text NOT NULL DEFAULT 'unknown',
        ADD COLUMN expires_at timestamptz,
        ADD CONSTRAINT artifacts_sha256_hex CHECK (sha256 ~ '^[0-9a-f]{64}$'),
        ADD CONSTRAINT artifacts_size_nonnegative CHECK (size_bytes >= 0)`);
    await q.query(
      `CREATE INDEX artifacts_run_idx ON artifacts (tenant_id, run_id, created_at) WHERE run_id IS NOT NULL`,
    );
    await q.query(`CREATE INDEX artifacts_expiry_idx ON artifacts (expires_at) WHERE expires_at IS NOT NULL`);
    await q.query(`CREATE INDEX artifacts_storage_key_idx ON artifacts (storage_key)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX artifacts_storage_key_idx`);
    await q.query(`DROP INDEX artifacts_expiry_idx`);
    await q.query(`DROP INDEX artifacts_run_idx`);
    // Rows without a session or principal cannot go back to the old shape.
    await q.query(`DELETE FROM artifacts WHERE session_id IS NULL OR principal_id IS NULL`);
    await q.query(`
      ALTER TABLE artifacts
        DROP CONSTRAINT artifacts_size_nonnegative,
        DROP CONSTRAINT artifacts_sha256_hex,
        DROP COLUMN expires_at,
        DROP COLUMN source,
        ALTER COLUMN principal_id SET NOT NULL,
        ALTER COLUMN session_id SET NOT NULL`);
    await q.query(`ALTER TABLE artifacts RENAME COLUMN storage_key TO storage_uri`);
  }
}
