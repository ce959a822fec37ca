import { modelBilling, type ProviderRegistry } from '../../../domain/model/provider-profile';
import type { Queryable } from '../../postgres';

/**
 * Appends the catalog prices of every profile model to `model_prices` when they differ from the
 * latest recorded row, so a recorded cost stays reproducible after a price change: the price of a
 * `model_calls` row is the latest `model_prices` row for its provider and model at `started_at`.
 * The table is append-only (UPDATE and DELETE are refused by a trigger).
 */
export async function recordPriceHistory(db: Queryable, registry: ProviderRegistry): Promise<number> {
  let inserted = 0;
  for (const profile of registry.profiles) {
    for (const model of profile.models) {
      // The price the model is actually billed at when the provider reports no cost (plan §6.5):
      // its catalog prices, else the pricing snapshot's, else its price_override.
      const billing = modelBilling(profile, model, registry.pricingSnapshot);
      if (!billing) continue;
      const p = billing.prices;
      const source =
        billing.source === 'catalog_price'
          ? profile.source
          : billing.source === 'pricing_snapshot'
            ? `${registry.pricingSnapshot?.source ?? 'pricing snapshot'} (pricing_snapshot)`
            : `${profile.source} (config_override)`;
      const r = await db.query(
        `INSERT INTO model_prices (provider, model, profile_version, registry_version, uncached_input_per_million,
                                   cached_input_per_million, cache_write_per_million, output_per_million, reasoning_per_million, source)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
          WHERE NOT EXISTS (
            SELECT 1 FROM (
              SELECT uncached_input_per_million, cached_input_per_million, cache_write_per_million, output_per_million, reasoning_per_million
                FROM model_prices WHERE provider = $1 AND model = $2 ORDER BY id DESC LIMIT 1
            ) latest
            WHERE latest.uncached_input_per_million = $5::numeric AND latest.cached_input_per_million = $6::numeric
              AND latest.cache_write_per_million = $7::numeric AND latest.output_per_million = $8::numeric
              AND latest.reasoning_per_million IS NOT DISTINCT FROM $9::numeric)`,
        [
          profile.name,
          model.id,
          profile.version,
          registry.version,
          p.uncachedInputPerMillion,
          p.cachedInputPerMillion,
          p.cacheWritePerMillion,
          p.outputPerMillion,
          p.reasoningPerMillion ?? null,
          source,
        ],
      );
      inserted += r.rowCount ?? 0;
    }
  }
  return inserted;
}
