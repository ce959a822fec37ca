import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * model_prices: the append-only history of catalog prices (plan §6.5, model-gateway ADR-0010), so
 * the cost recorded on a model_calls row stays reproducible after a vendor price change. A row is
 * appended at startup whenever a provider profile's prices for a model differ from the latest row.
 */
export class ModelPrices1764500300000 implements MigrationInterface {
  name = 'ModelPrices1764500300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE model_prices (
        id bigserial PRIMARY KEY,
        provider text NOT NULL,
        model text NOT NULL,
        profile_version integer NOT NULL,
        registry_version text NOT NULL,
        uncached_input_per_million numeric NOT NULL,
        cached_input_per_million numeric NOT NULL,
        cache_write_per_million numeric NOT NULL,
        output_per_million numeric NOT NULL,
        reasoning_per_million numeric,
        currency text NOT NULL DEFAULT 'USD',
        source text NOT NULL,
        effective_from timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX model_prices_lookup_idx ON model_prices (provider, model, id DESC)`);
    await q.query(`
      CREATE FUNCTION model_prices_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'model_prices is append-only: % is not allowed', TG_OP;
      END $$`);
    await q.query(`
      CREATE TRIGGER model_prices_append_only BEFORE UPDATE OR DELETE ON model_prices
        FOR EACH ROW EXECUTE FUNCTION model_prices_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE model_prices');
    await q.query('DROP FUNCTION model_prices_append_only()');
  }
}
