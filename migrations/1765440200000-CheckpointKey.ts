import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 35 (ADR 0054): a checkpoint is named by its run and version, the key its one reader uses
 * (the latest version of a run) and the unique constraint every write already checks. The surrogate
 * `id` (bigserial) and its primary key index went unread: they cost each checkpoint an index entry
 * and a sequence. `(run_id, version)` becomes the primary key, keeping the constraint's name
 * (`checkpoints_run_version_key`), which the append translates into a concurrency conflict.
 */
export class CheckpointKey1765440200000 implements MigrationInterface {
  name = 'CheckpointKey1765440200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_pkey`);
    await q.query(
      `ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_run_version_key,
         ADD CONSTRAINT checkpoints_run_version_key PRIMARY KEY (run_id, version)`,
    );
    await q.query(`ALTER TABLE checkpoints DROP COLUMN id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE checkpoints ADD COLUMN id bigserial`);
    await q.query(
      `ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_run_version_key,
         ADD CONSTRAINT checkpoints_run_version_key UNIQUE (run_id, version)`,
    );
    await q.query(`ALTER TABLE checkpoints ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (id)`);
  }
}
