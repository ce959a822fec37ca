import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindProfiles, loadProviderRegistry } from '../../../src/adapters/model/profiles';
import { ConfigurationError } from '../../../src/domain/errors';
import type { ModelProvider } from '../../../src/ports/model-provider';
import { ModelRouter } from '../../../src/runtime/model-router';

const SHIPPED = join(__dirname, '..', '..', '..', 'config', 'providers');

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'profiles-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const offline = (name: string): ModelProvider => ({
  name,
  stream: () => (async function* () {})(),
  close: () => Promise.resolve(),
});

const PROFILE = `
name: acme
version: 3
api_mode: responses
base_url: https://api.acme.test/v1
credential_env: ACME_KEY
models:
  - id: acme-large
    aliases: [default]
    context_limit: 100000
    capabilities: { tool_calling: true }
    prices: { uncached_input: "1.50", cached_input: "0.15", output: "6" }
  - id: acme-text
    capabilities: { tool_calling: false }
    prices: { uncached_input: "0.1", cached_input: "0.1", output: "0.1" }
`;

describe('provider profiles', () => {
  it('loads the shipped profiles and policies', () => {
    const registry = loadProviderRegistry(SHIPPED, {});
    expect(registry.profiles.map((p) => `${p.name}:${p.apiMode}`).sort()).toEqual([
      'anthropic:anthropic',
      'ollama:chat_completions',
      'openai:responses',
      'openrouter:chat_completions',
    ]);
    expect(registry.policies.balanced).toEqual({ profile: 'openai', model: 'default' });
    expect(registry.version).toMatch(/^r1-[0-9a-f]{12}$/);
    const openai = registry.profiles.find((p) => p.name === 'openai')!;
    expect(openai.baseUrl).toBe('https://api.openai.com/v1');
    expect(registry.profiles.find((p) => p.name === 'anthropic')!.baseUrl).toBe('https://api.anthropic.com');
  });

  it('interpolates ${VAR:-default} from the environment', () => {
    const registry = loadProviderRegistry(SHIPPED, {
      OLLAMA_BASE_URL: 'http://10.0.0.5:8000/v1',
      OLLAMA_MODEL: 'Qwen/Qwen3-8B',
    });
    const ollama = registry.profiles.find((p) => p.name === 'ollama')!;
    expect(ollama.baseUrl).toBe('http://10.0.0.5:8000/v1');
    expect(ollama.models[0].id).toBe('Qwen/Qwen3-8B');
  });

  it.each([
    [
      'an unknown api mode',
      PROFILE.replace('api_mode: responses', 'api_mode: bedrock'),
      /acme.yaml: api_mode "bedrock" is not a known api mode/,
    ],
    [
      'a price written as a float',
      PROFILE.replace('output: "6"', 'output: 6'),
      /prices.output must be a quoted decimal string/,
    ],
    [
      'a model without prices',
      PROFILE.replace('    prices: { uncached_input: "0.1", cached_input: "0.1", output: "0.1" }\n', ''),
      /models\[1\].prices is required/,
    ],
    [
      'a key instead of a variable name',
      PROFILE.replace('credential_env: ACME_KEY', 'credential_env: sk-live-abc'),
      /must be the NAME of an environment variable/,
    ],
    ['a misspelt key', PROFILE.replace('base_url:', 'base-url:'), /unknown key\(s\) base-url/],
    [
      'an Anthropic base URL ending in /v1',
      PROFILE.replace('api_mode: responses', 'api_mode: anthropic'),
      /must not end in \/v1 for api_mode anthropic/,
    ],
  ])('refuses %s, naming the file and the field', (_label, text, message) => {
    const dir = dirWith({ 'acme.yaml': text });
    expect(() => loadProviderRegistry(dir, {})).toThrow(message);
  });

  it('refuses a policy naming a model its profile does not list', () => {
    const dir = dirWith({
      'acme.yaml': PROFILE,
      'registry.yaml': 'model_policies:\n  big: { profile: acme, model: huge }\n',
    });
    expect(() => loadProviderRegistry(dir, {})).toThrow(/model policy "big" names model "huge", which profile "acme"/);
  });

  it('is empty (offline only) when the directory does not exist', () => {
    expect(loadProviderRegistry(join(tmpdir(), 'no-such-profiles-dir'), {}).profiles).toEqual([]);
  });
});

describe('the model router', () => {
  const registry = loadProviderRegistry(
    dirWith({
      'acme.yaml': PROFILE,
      'registry.yaml': 'model_policies:\n  balanced: { profile: acme, model: default }\n',
    }),
    {},
  );
  const router = (env: Record<string, string>) =>
    new ModelRouter([offline('demo'), offline('fake')], { registry, bindings: bindProfiles(registry, env) });

  it('keeps demo and fake:<fixture> exactly as before, free of charge', () => {
    const r = router({});
    expect(r.resolve('demo')).toMatchObject({ model: { provider: 'demo', model: 'demo' }, billing: { kind: 'free' } });
    expect(r.resolve('fake:calculator_then_answer')).toMatchObject({
      model: { provider: 'fake', model: 'calculator_then_answer' },
      billing: { kind: 'free' },
    });
  });

  it('resolves a named policy and <profile>:<alias> to the model, its context limit and catalog prices', () => {
    const r = router({ ACME_KEY: 'k-123' });
    for (const policy of ['balanced', 'acme:default', 'acme:acme-large']) {
      const route = r.resolve(policy, { toolCalling: true });
      expect(route.provider.name).toBe('acme');
      expect(route.model).toMatchObject({
        provider: 'acme',
        model: 'acme-large',
        contextLimit: 100000,
        profileVersion: 3,
        registryVersion: registry.version,
      });
      expect(route.billing).toEqual({
        kind: 'price_table',
        source: 'catalog_price',
        prices: {
          uncachedInputPerMillion: '1.50',
          cachedInputPerMillion: '0.15',
          cacheWritePerMillion: '0',
          outputPerMillion: '6',
        },
      });
    }
  });

  it('refuses a profile whose key is missing, naming the profile and the variable', () => {
    expect(() => router({}).resolve('balanced')).toThrow(ConfigurationError);
    expect(() => router({}).resolve('balanced')).toThrow(/provider profile "acme" .* ACME_KEY, which is not set/);
  });

  it('refuses a model lacking tool calling when the run needs it', () => {
    expect(() => router({ ACME_KEY: 'k' }).resolve('acme:acme-text', { toolCalling: true })).toThrow(
      /model "acme-text" of provider profile "acme" lacks tool_calling/,
    );
    expect(router({ ACME_KEY: 'k' }).resolve('acme:acme-text').model.model).toBe('acme-text');
  });

  it('refuses an agent at startup when its policy cannot be routed', () => {
    expect(() =>
      router({}).assertRoutable({ id: 'general', modelPolicy: 'balanced', enabledTools: ['math.calculate'] }),
    ).toThrow(/agent "general" cannot start: provider profile "acme"/);
    expect(() =>
      router({}).assertRoutable({ id: 'general', modelPolicy: 'demo', enabledTools: ['math.calculate'] }),
    ).not.toThrow();
  });

  it('names the configured providers for an unknown one', () => {
    expect(() => router({}).resolve('nope:x')).toThrow(
      /provider "nope", which is not configured \(configured: demo, fake, acme\)/,
    );
  });
});
