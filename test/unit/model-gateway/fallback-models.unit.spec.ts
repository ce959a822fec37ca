import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindProfiles, loadProviderRegistry } from '../../../src/adapters/model/profiles';
import { ConfigurationError } from '../../../src/domain/errors';
import { afterFailedAttempt, fallbackReasonOf, type FailedAttempt } from '../../../src/domain/model/fallback';
import type { ModelProvider } from '../../../src/ports/model-provider';
import { ModelChain } from '../../../src/runtime/model-chain';
import { ModelRouter } from '../../../src/runtime/model-router';

/** Fallback models (issue 33 item 4, ADR 0046): config validation, the decision, the chain. */

const CAPS = '{ tool_calling: true }';
const PRICES = '{ uncached_input: "1", cached_input: "0.1", output: "2" }';
const profile = (name: string, key: string, ...models: string[]) =>
  `name: ${name}\nversion: 1\napi_mode: chat_completions\nbase_url: https://${name}.test/v1\ncredential_env: ${key}\nmodels:\n` +
  models
    .map(
      (m, i) =>
        `  - id: ${m}\n${i === 0 ? '    aliases: [default]\n' : ''}    capabilities: ${CAPS}\n    prices: ${PRICES}\n`,
    )
    .join('');

function dirWith(registry: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fallback-profiles-'));
  writeFileSync(join(dir, 'acme.yaml'), profile('acme', 'ACME_KEY', 'acme-large', 'acme-small'));
  writeFileSync(join(dir, 'other.yaml'), profile('other', 'OTHER_KEY', 'other-1'));
  writeFileSync(join(dir, 'third.yaml'), profile('third', 'THIRD_KEY', 'third-1'));
  writeFileSync(join(dir, 'registry.yaml'), registry);
  return dir;
}

const offline = (name: string): ModelProvider => ({
  name,
  stream: () => (async function* () {})(),
  close: () => Promise.resolve(),
});

function refusal(registry: string): ConfigurationError {
  try {
    loadProviderRegistry(dirWith(registry), {});
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigurationError);
    return e as ConfigurationError;
  }
  throw new Error('expected the registry to be refused');
}

describe('a model policy with fallbacks', () => {
  it('loads an ordered list of <profile>:<model or alias> references', () => {
    const registry = loadProviderRegistry(
      dirWith(
        'model_policies:\n  balanced: { profile: acme, model: default, fallbacks: [other:default, acme:acme-small] }\n',
      ),
      {},
    );
    expect(registry.policies.balanced).toEqual({
      profile: 'acme',
      model: 'default',
      fallbacks: ['other:default', 'acme:acme-small'],
    });
  });

  it.each([
    [
      'an unknown profile',
      '[nowhere:default]',
      /fallbacks\[0\] "nowhere:default" names profile "nowhere", which does not exist/,
    ],
    [
      'an unknown model',
      '[other:default, other:huge]',
      /fallbacks\[1\] "other:huge" names model "huge", which profile "other"/,
    ],
    ["the policy's own model", '[acme:acme-large]', /fallbacks\[0\] "acme:acme-large" is the policy's own model/],
    [
      'a repeated fallback',
      '[other:default, other:other-1]',
      /fallbacks\[1\] "other:other-1" is the policy's own model or an earlier fallback/,
    ],
    [
      'a reference that is not <profile>:<model>',
      '[other]',
      /fallbacks\[0\] "other" must be "<profile>:<model or alias>"/,
    ],
    ['a mapping instead of a list', '{ other: default }', /fallbacks must be a list/],
  ])('refuses %s, naming the field', (_what, list, message) => {
    const e = refusal(`model_policies:\n  balanced: { profile: acme, model: default, fallbacks: ${list} }\n`);
    expect(e.message).toMatch(message);
    expect(e.details.field).toMatch(/^model_policies\.balanced\.fallbacks/);
    expect(e.details.file).toMatch(/registry\.yaml$/);
  });
});

describe('which failures fall back', () => {
  it.each([
    [{ httpStatus: 429, providerCode: 'rate_limit_exceeded' }, 'rate_limited'],
    [{ httpStatus: 429, providerCode: 'http_429' }, 'rate_limited'],
    [{ httpStatus: 429, providerCode: 'insufficient_quota' }, 'quota_exceeded'],
    [{ providerCode: 'RESOURCE_EXHAUSTED' }, 'quota_exceeded'],
    [{ httpStatus: 529, providerCode: 'overloaded_error' }, 'overloaded'],
    [{ providerCode: 'overloaded_error' }, 'overloaded'],
    [{ httpStatus: 503, providerCode: 'http_503' }, 'overloaded'],
    [{ httpStatus: 500, providerCode: 'server_error' }, null],
    [{ httpStatus: 400, providerCode: 'invalid_request_error' }, null],
    [{ providerCode: 'connection_error' }, null],
    [undefined, null],
  ])('%j → %s', (details, reason) => {
    expect(fallbackReasonOf(details)).toBe(reason);
  });

  const base: FailedAttempt = {
    reason: 'rate_limited',
    retryable: true,
    attemptsOnModel: 1,
    maxAttempts: 3,
    waitFitsDeadline: true,
    pastDeadline: false,
    hasFallback: true,
  };

  it('retries the same model while its retry budget and the deadline allow', () => {
    expect(afterFailedAttempt(base)).toBe('retry');
    expect(afterFailedAttempt({ ...base, attemptsOnModel: 2 })).toBe('retry');
  });

  it('falls back once the budget is spent, or when the retry-after would overrun the deadline', () => {
    expect(afterFailedAttempt({ ...base, attemptsOnModel: 3 })).toBe('fall_back');
    expect(afterFailedAttempt({ ...base, waitFitsDeadline: false })).toBe('fall_back');
  });

  it('fails without a fallback, past the deadline, or for a failure of another kind', () => {
    expect(afterFailedAttempt({ ...base, attemptsOnModel: 3, hasFallback: false })).toBe('fail');
    expect(afterFailedAttempt({ ...base, attemptsOnModel: 3, pastDeadline: true, waitFitsDeadline: false })).toBe(
      'fail',
    );
    expect(afterFailedAttempt({ ...base, attemptsOnModel: 3, reason: null })).toBe('fail');
    expect(afterFailedAttempt({ ...base, retryable: false, reason: null })).toBe('fail');
  });
});

describe('the model chain of a run', () => {
  const registry = loadProviderRegistry(
    dirWith(
      'model_policies:\n  balanced: { profile: acme, model: default, fallbacks: [other:default, third:default] }\n',
    ),
    {},
  );
  const router = (env: Record<string, string>) =>
    new ModelRouter([offline('demo')], { registry, bindings: bindProfiles(registry, env) });

  it('routes the named policy with its fallbacks, and moves along them in order', () => {
    const r = router({ ACME_KEY: 'k-1', OTHER_KEY: 'k-2', THIRD_KEY: 'k-3' });
    const primary = r.resolve('balanced');
    expect(primary.fallbacks).toEqual(['other:default', 'third:default']);
    const chain = new ModelChain(primary, (ref) => r.resolve(ref));
    expect([chain.active.model.provider, chain.fallbackFrom, chain.sinceStep]).toEqual(['acme', null, null]);
    expect(chain.advance('rate_limited', 2)).toEqual({ moved: true, skipped: [] });
    expect(chain.active.model).toMatchObject({ provider: 'other', model: 'other-1' });
    expect(chain.active.billing).toMatchObject({ kind: 'price_table' });
    expect(chain.fallbackFrom).toEqual({ provider: 'acme', model: 'acme-large', reason: 'rate_limited' });
    expect(chain.sinceStep).toBe(2);
    expect(chain.advance('overloaded', 3).moved).toBe(true);
    expect(chain.fallbackFrom).toEqual({ provider: 'other', model: 'other-1', reason: 'overloaded' });
    expect(chain.hasNext()).toBe(false);
    expect(chain.advance('overloaded', 3)).toEqual({ moved: false, skipped: [] });
    expect(chain.active.model.provider).toBe('third');
  });

  it('skips a fallback that cannot be routed now (its key unset), saying why', () => {
    const r = router({ ACME_KEY: 'k-1', THIRD_KEY: 'k-3' });
    const chain = new ModelChain(r.resolve('balanced'), (ref) => r.resolve(ref));
    const moved = chain.advance('quota_exceeded', 1);
    expect(moved.moved).toBe(true);
    expect(moved.skipped).toEqual([expect.stringMatching(/^other:default: .*OTHER_KEY/)]);
    expect(chain.active.model.provider).toBe('third');
    expect(chain.fallbackFrom).toEqual({ provider: 'acme', model: 'acme-large', reason: 'quota_exceeded' });
  });

  it('resumes on the fallback the log last moved to, from the step of its first call', () => {
    const r = router({ ACME_KEY: 'k-1', OTHER_KEY: 'k-2', THIRD_KEY: 'k-3' });
    const chain = new ModelChain(r.resolve('balanced'), (ref) => r.resolve(ref));
    const from = { provider: 'acme', model: 'acme-large', reason: 'rate_limited' as const };
    chain.resume([
      { step: 1, provider: 'acme', model: 'acme-large', fallbackFrom: null },
      { step: 2, provider: 'acme', model: 'acme-large', fallbackFrom: null },
      { step: 2, provider: 'other', model: 'other-1', fallbackFrom: from },
      { step: 3, provider: 'other', model: 'other-1', fallbackFrom: from },
    ]);
    expect(chain.active.model.provider).toBe('other');
    expect([chain.fallbackFrom, chain.sinceStep, chain.hasNext()]).toEqual([from, 2, true]);

    const fresh = new ModelChain(r.resolve('balanced'), (ref) => r.resolve(ref));
    fresh.resume([{ step: 1, provider: 'acme', model: 'acme-large' }]);
    expect([fresh.active.model.provider, fresh.fallbackFrom, fresh.sinceStep]).toEqual(['acme', null, null]);
  });
});
