import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindProfiles, loadProviderRegistry, recordPriceHistory } from '../../../src/adapters/model/profiles';
import { EMPTY_PRICING_SNAPSHOT, modelBilling, type PricingSnapshot } from '../../../src/domain/model/provider-profile';
import { priceModelCall, type PriceTable, type TokenUsage } from '../../../src/domain/run/usage';
import type { ModelProvider } from '../../../src/ports/model-provider';
import { ModelRouter } from '../../../src/runtime/model-router';
import { testModel, testProfile } from './support/profiles';

/**
 * Plan §6.5, every step of the precedence: provider-reported cost > provider usage API > catalog
 * price (the profile's model prices) > pricing snapshot > configured override; free for offline.
 */

const SHIPPED = join(__dirname, '..', '..', '..', 'config', 'providers');
const usage: TokenUsage = {
  uncachedInputTokens: 1000,
  cachedInputTokens: 2000,
  cacheWriteTokens: 100,
  outputTokens: 500,
  reasoningTokens: 200,
};
const CATALOG: PriceTable = {
  uncachedInputPerMillion: '1',
  cachedInputPerMillion: '0.1',
  cacheWritePerMillion: '1.25',
  outputPerMillion: '5',
};
const SNAPSHOT: PriceTable = { ...CATALOG, outputPerMillion: '8' };
const OVERRIDE: PriceTable = { ...CATALOG, outputPerMillion: '20' };
// (1000×1 + 2000×0.1 + 100×1.25 + 500×5) / 1e6 = 0.003825; output at 8 → 0.005325; at 20 → 0.011325
const catalog = { kind: 'price_table', prices: CATALOG, source: 'catalog_price' } as const;

describe('priceModelCall: the reported costs', () => {
  it('1. a cost on the response wins over the usage API and every price table', () => {
    expect(priceModelCall(usage, { providerResponse: '0.0042', providerUsageApi: '0.9' }, catalog)).toEqual({
      cost: '0.0042',
      costSource: 'provider_response',
    });
  });

  it('2. the provider usage API wins over the catalog price', () => {
    expect(priceModelCall(usage, { providerUsageApi: '0.0031' }, catalog)).toEqual({
      cost: '0.0031',
      costSource: 'provider_usage_api',
    });
    expect(priceModelCall(usage, { providerResponse: null, providerUsageApi: '1e-4' }, catalog)).toEqual({
      cost: '0.0001',
      costSource: 'provider_usage_api',
    });
  });

  it('ignores a malformed reported figure and falls through to the next source', () => {
    expect(priceModelCall(usage, { providerResponse: 'NaN', providerUsageApi: '-1' }, catalog)).toEqual({
      cost: '0.003825',
      costSource: 'catalog_price',
    });
  });

  it('keeps the old call form (a provider cost string) working', () => {
    expect(priceModelCall(usage, '0.5', catalog).costSource).toBe('provider_response');
    expect(priceModelCall(usage, undefined, { kind: 'free' })).toEqual({ cost: '0', costSource: 'free' });
  });
});

describe('modelBilling: the price tables', () => {
  const snapshot: PricingSnapshot = { version: '1', source: 'snap.yaml', prices: { 'local/m': SNAPSHOT } };
  const cost = (prices: PriceTable | null, priceOverride: PriceTable | null, snap = snapshot) => {
    const profile = testProfile('chat_completions', 'http://x/v1', testModel('m', { prices, priceOverride }));
    const billing = modelBilling(profile, profile.models[0], snap);
    return billing && priceModelCall(usage, undefined, billing);
  };

  it('3. the profile catalog price wins over the snapshot and the override', () => {
    expect(cost(CATALOG, OVERRIDE)).toEqual({ cost: '0.003825', costSource: 'catalog_price' });
  });

  it('4. the pricing snapshot prices a model without catalog prices, before the override', () => {
    expect(cost(null, OVERRIDE)).toEqual({ cost: '0.005325', costSource: 'pricing_snapshot' });
  });

  it('5. the configured override is used last', () => {
    expect(cost(null, OVERRIDE, EMPTY_PRICING_SNAPSHOT)).toEqual({ cost: '0.011325', costSource: 'config_override' });
  });

  it('is null when nothing prices the model', () => {
    expect(cost(null, null, EMPTY_PRICING_SNAPSHOT)).toBeNull();
  });
});

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'pricing-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const PROFILE = `
name: acme
version: 2
api_mode: chat_completions
base_url: https://acme.test/v1
models:
  - id: listed
    capabilities: { tool_calling: true }
    prices: { uncached_input: "1", cached_input: "0.1", output: "5" }
    price_override: { uncached_input: "9", cached_input: "9", output: "9" }
  - id: snapshotted
    capabilities: { tool_calling: true }
    price_override: { uncached_input: "9", cached_input: "9", output: "9" }
  - id: overridden
    capabilities: { tool_calling: true }
    price_override: { uncached_input: "2", cached_input: "0.2", output: "20" }
`;
const SNAPSHOT_FILE = `
version: 4
as_of: "2025-10-15"
reference: "test"
prices:
  acme/snapshotted: { uncached_input: "1", cached_input: "0.1", cache_write: "1.25", output: "8" }
  other/unused: { uncached_input: "1", cached_input: "1", output: "1" }
`;

describe('the pricing snapshot and price_override in the registry', () => {
  const offline = (name: string): ModelProvider => ({
    name,
    stream: () => (async function* () {})(),
    close: () => Promise.resolve(),
  });

  it('routes each model to its price table and cost source', () => {
    const registry = loadProviderRegistry(
      dirWith({ 'acme.yaml': PROFILE, 'pricing-snapshot.yaml': SNAPSHOT_FILE }),
      {},
    );
    expect(registry.profiles.map((p) => p.name)).toEqual(['acme']);
    expect(registry.pricingSnapshot?.version).toBe('4');
    const router = new ModelRouter([offline('demo')], { registry, bindings: bindProfiles(registry, {}) });
    const source = (m: string) => {
      const b = router.resolve(`acme:${m}`).billing;
      return b.kind === 'price_table' ? [b.source, b.prices.outputPerMillion] : [b.kind];
    };
    expect(source('listed')).toEqual(['catalog_price', '5']);
    expect(source('snapshotted')).toEqual(['pricing_snapshot', '8']);
    expect(source('overridden')).toEqual(['config_override', '20']);
  });

  it('records the price actually in force in the price history, with where it came from', async () => {
    const dir = dirWith({ 'acme.yaml': PROFILE, 'pricing-snapshot.yaml': SNAPSHOT_FILE });
    const registry = loadProviderRegistry(dir, {});
    const rows: unknown[][] = [];
    await recordPriceHistory(
      {
        query: (_text: string, values?: unknown[]) => {
          rows.push(values ?? []);
          return Promise.resolve({ rows: [], rowCount: 1 });
        },
      } as never,
      registry,
    );
    expect(rows.map((v) => [v[1], v[7], v[9]])).toEqual([
      ['listed', '5', join(dir, 'acme.yaml')],
      ['snapshotted', '8', `${join(dir, 'pricing-snapshot.yaml')} (pricing_snapshot)`],
      ['overridden', '20', `${join(dir, 'acme.yaml')} (config_override)`],
    ]);
  });

  it('loads the shipped snapshot, and it is not mistaken for a profile', () => {
    const registry = loadProviderRegistry(SHIPPED, {});
    expect(registry.profiles.map((p) => p.name)).not.toContain('pricing-snapshot');
    expect(registry.pricingSnapshot?.source).toBe(join(SHIPPED, 'pricing-snapshot.yaml'));
    expect(registry.pricingSnapshot?.prices['openai/gpt-5-mini']).toMatchObject({ outputPerMillion: '2.00' });
  });

  it.each([
    [
      'a snapshot price written as a float',
      { 'acme.yaml': PROFILE, 'pricing-snapshot.yaml': SNAPSHOT_FILE.replace('output: "8"', 'output: 8') },
      /pricing snapshot .*pricing-snapshot\.yaml: prices\.acme\/snapshotted\.output must be a quoted decimal string/,
    ],
    [
      'a snapshot entry not keyed provider/model',
      { 'acme.yaml': PROFILE, 'pricing-snapshot.yaml': SNAPSHOT_FILE.replace('other/unused', 'unused') },
      /pricing snapshot .*pricing-snapshot\.yaml: prices\.unused must be keyed "<provider>\/<model id>"/,
    ],
    [
      'a snapshot without a version',
      { 'acme.yaml': PROFILE, 'pricing-snapshot.yaml': SNAPSHOT_FILE.replace('version: 4', '') },
      /pricing snapshot .*pricing-snapshot\.yaml: version must be an integer >= 1/,
    ],
    [
      'a snapshot price class that does not exist',
      { 'acme.yaml': PROFILE, 'pricing-snapshot.yaml': SNAPSHOT_FILE.replace('output: "8"', 'outptu: "8"') },
      /pricing snapshot .*prices\.acme\/snapshotted has unknown key\(s\) outptu/,
    ],
    [
      'a malformed price_override',
      {
        'acme.yaml': PROFILE.replace('cached_input: "0.2", output: "20"', 'cached_input: "0.2", output: "-20"'),
        'pricing-snapshot.yaml': SNAPSHOT_FILE,
      },
      /provider profile .*acme\.yaml: models\[2\]\.price_override\.output must be a quoted decimal string/,
    ],
    [
      'a model priced by nothing',
      { 'acme.yaml': PROFILE },
      /provider profile .*acme\.yaml: models\[1\]\.prices is required: model "snapshotted" has no prices/,
    ],
  ])('refuses %s at startup, naming the file and the field', (_label, files, message) => {
    const registry = () => {
      const dir = dirWith(files);
      // `a model priced by nothing`: drop the override so that nothing prices "snapshotted".
      if (!(files as Record<string, string>)['pricing-snapshot.yaml'])
        writeFileSync(
          join(dir, 'acme.yaml'),
          PROFILE.replace(
            '  - id: snapshotted\n    capabilities: { tool_calling: true }\n    price_override: { uncached_input: "9", cached_input: "9", output: "9" }\n',
            '  - id: snapshotted\n    capabilities: { tool_calling: true }\n',
          ),
        );
      return loadProviderRegistry(dir, {});
    };
    expect(registry).toThrow(message);
  });
});
