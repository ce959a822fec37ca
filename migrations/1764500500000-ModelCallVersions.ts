import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * model_calls gains the provider profile and registry that routed each call (issue "model
 * gateway", §5: "a model_calls row per attempt with … provider, model and registry version"),
 * projected from `model.request.started` v2. Rows of v1 events keep NULL: v1 never recorded them.
 * The model_calls projection's version was bumped with this change, so a rebuild refills them.
 */
export class ModelCallVersions1764500500000 implements MigrationInterface {
  name = 'ModelCallVersions1764500500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE model_calls
        ADD COLUMN profile_name text,
        ADD COLUMN profile_version integer,
        ADD COLUMN registry_version text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE model_calls
        DROP COLUMN registry_version,
        DROP COLUMN profile_version,
        DROP COLUMN profile_name`);
  }
}
