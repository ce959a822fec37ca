import { ConfigurationError } from '../../../domain/errors';
import type { ModelCapabilities } from '../../../domain/model/capabilities';
import {
  API_MODES,
  type ApiMode,
  type ModelPolicyTarget,
  type PricingSnapshot,
  type ProfileModel,
  type ProviderProfile,
} from '../../../domain/model/provider-profile';
import { isDecimalString, type PriceTable } from '../../../domain/run/usage';

/**
 * Validates one provider-profile YAML document (see docs/model-gateway.md). Unknown keys are
 * refused so a typo such as `api-mode:` fails loudly; every message names the profile file and
 * the offending field.
 */

type Doc = Record<string, unknown>;
type Env = Readonly<Record<string, string | undefined>>;

const PROFILE_KEYS = [
  'name',
  'version',
  'api_mode',
  'base_url',
  'credential_env',
  'timeout_seconds',
  'strip_reasoning',
  'stream_usage',
  'models',
];
const MODEL_KEYS = [
  'id',
  'aliases',
  'context_limit',
  'max_output_tokens',
  'capabilities',
  'prices',
  'price_override',
  'reasoning',
  'thinking',
  'tool_call_format',
];
const CAPABILITY_KEYS: Readonly<Record<string, keyof Omit<ModelCapabilities, 'maxContextTokens'>>> = {
  tool_calling: 'toolCalling',
  parallel_tool_calls: 'parallelToolCalls',
  structured_output: 'structuredOutput',
  streaming: 'streaming',
  vision: 'vision',
  audio: 'audio',
  provider_managed_state: 'providerManagedState',
  reasoning: 'reasoning',
};
const PRICE_KEYS: Readonly<Record<string, keyof PriceTable>> = {
  uncached_input: 'uncachedInputPerMillion',
  cached_input: 'cachedInputPerMillion',
  cache_write: 'cacheWritePerMillion',
  output: 'outputPerMillion',
  reasoning: 'reasoningPerMillion',
};
const NAME = /^[a-z0-9][a-z0-9_-]*$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

class Ctx {
  constructor(
    readonly file: string,
    readonly env: Env,
    readonly what = 'provider profile',
  ) {}
  fail(field: string, problem: string): never {
    throw new ConfigurationError(`${this.what} ${this.file}: ${field} ${problem}`, { file: this.file, field });
  }
  object(value: unknown, field: string, allowed: readonly string[]): Doc {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) this.fail(field, 'must be a mapping');
    const doc = value as Doc;
    const unknown = Object.keys(doc).filter((k) => !allowed.includes(k));
    if (unknown.length > 0)
      this.fail(field, `has unknown key(s) ${unknown.join(', ')} (allowed: ${allowed.join(', ')})`);
    return doc;
  }
  string(value: unknown, field: string): string {
    if (typeof value !== 'string' || value.trim() === '') this.fail(field, 'must be a non-empty string');
    return this.interpolate(value, field);
  }
  int(value: unknown, field: string, min: number): number {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
      this.fail(field, `must be an integer >= ${min}`);
    return value;
  }
  bool(value: unknown, field: string, fallback: boolean): boolean {
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') this.fail(field, 'must be true or false');
    return value;
  }
  /** `${VAR}` and `${VAR:-default}` from the environment, so a base URL or model id can be set per deployment. */
  interpolate(value: string, field: string): string {
    return value.replace(
      /\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}/g,
      (_m, name: string, _d, fallback: string | undefined) => {
        const v = this.env[name];
        if (v !== undefined && v !== '') return v;
        if (fallback !== undefined) return fallback;
        return this.fail(field, `refers to \${${name}}, which is not set and has no default`);
      },
    );
  }
}

/** Parses and validates one profile document read from `file`. */
export function parseProfile(document: unknown, file: string, env: Env): ProviderProfile {
  const c: Ctx = new Ctx(file, env);
  const doc = c.object(document, 'the document', PROFILE_KEYS);
  const name = c.string(doc.name, 'name');
  if (!NAME.test(name))
    c.fail(
      'name',
      `"${name}" must be lowercase letters, digits, _ and - (it prefixes model policies: ${'<name>:<model>'})`,
    );
  if (name === 'fake' || name === 'demo') c.fail('name', `"${name}" is reserved for the offline providers`);
  const apiMode = c.string(doc.api_mode, 'api_mode');
  if (!(API_MODES as readonly string[]).includes(apiMode)) {
    c.fail('api_mode', `"${apiMode}" is not a known api mode (known: ${API_MODES.join(', ')})`);
  }
  const baseUrl = c.string(doc.base_url, 'base_url');
  if (!/^https?:\/\//.test(baseUrl)) c.fail('base_url', `"${baseUrl}" must be an http(s) URL`);
  if (apiMode === 'anthropic' && /\/v1\/?$/.test(baseUrl)) {
    c.fail('base_url', `"${baseUrl}" must not end in /v1 for api_mode anthropic (the SDK appends /v1/messages)`);
  }
  let credentialEnv: string | null = null;
  if (doc.credential_env !== undefined && doc.credential_env !== null) {
    credentialEnv = c.string(doc.credential_env, 'credential_env');
    if (!ENV_NAME.test(credentialEnv))
      c.fail('credential_env', `"${credentialEnv}" must be the NAME of an environment variable (never the key itself)`);
  } else if (apiMode !== 'chat_completions') {
    c.fail('credential_env', `is required for api_mode ${apiMode}`);
  }
  if (!Array.isArray(doc.models) || doc.models.length === 0) c.fail('models', 'must be a non-empty list');
  const models = doc.models.map((m: unknown, i) => parseModel(c, m, `models[${i}]`, apiMode as ApiMode));
  const seen = new Set<string>();
  for (const m of models) {
    for (const n of [m.id, ...m.aliases]) {
      if (seen.has(n)) c.fail('models', `name or alias "${n}" is used twice`);
      seen.add(n);
    }
  }
  return {
    name,
    version: c.int(doc.version, 'version', 1),
    apiMode: apiMode as ApiMode,
    baseUrl,
    credentialEnv,
    models,
    stripReasoning: c.bool(doc.strip_reasoning, 'strip_reasoning', apiMode === 'chat_completions'),
    streamUsage: c.bool(doc.stream_usage, 'stream_usage', true),
    timeoutMs: doc.timeout_seconds === undefined ? 120_000 : c.int(doc.timeout_seconds, 'timeout_seconds', 1) * 1000,
    source: file,
  };
}

/** `parse(value)`, or null when the field is absent or null. */
function orNull<T>(value: unknown, parse: (v: unknown) => T): T | null {
  return value === undefined || value === null ? null : parse(value);
}

function parseModel(c: Ctx, value: unknown, path: string, apiMode: ApiMode): ProfileModel {
  const doc = c.object(value, path, MODEL_KEYS);
  const id = c.string(doc.id, `${path}.id`);
  const aliases = doc.aliases === undefined ? [] : doc.aliases;
  if (!Array.isArray(aliases)) c.fail(`${path}.aliases`, 'must be a list of names');
  const contextLimit = orNull(doc.context_limit, (v) => c.int(v, `${path}.context_limit`, 1));
  const reasoning =
    doc.reasoning === undefined ? {} : c.object(doc.reasoning, `${path}.reasoning`, ['effort', 'summary']);
  const thinking = doc.thinking === undefined ? {} : c.object(doc.thinking, `${path}.thinking`, ['budget_tokens']);
  if (doc.thinking !== undefined && apiMode !== 'anthropic')
    c.fail(`${path}.thinking`, 'applies only to api_mode anthropic');
  if (doc.reasoning !== undefined && apiMode !== 'responses')
    c.fail(`${path}.reasoning`, 'applies only to api_mode responses');
  const format = parseToolCallFormat(c, doc.tool_call_format, `${path}.tool_call_format`, apiMode);
  return {
    id,
    aliases: aliases.map((a: unknown, i) => c.string(a, `${path}.aliases[${i}]`)),
    capabilities: parseCapabilities(c, doc.capabilities, `${path}.capabilities`, contextLimit),
    contextLimit,
    maxOutputTokens: orNull(doc.max_output_tokens, (v) => c.int(v, `${path}.max_output_tokens`, 1)),
    // Optional: a model without prices is priced by the pricing snapshot or its price_override
    // (plan §6.5); the loader refuses one that none of the three prices.
    prices: orNull(doc.prices, (v) => parsePrices(c, v, `${path}.prices`)),
    priceOverride: orNull(doc.price_override, (v) => parsePrices(c, v, `${path}.price_override`)),
    reasoningEffort: reasoning.effort === undefined ? null : c.string(reasoning.effort, `${path}.reasoning.effort`),
    reasoningSummary: reasoning.summary === undefined ? null : c.string(reasoning.summary, `${path}.reasoning.summary`),
    thinkingBudgetTokens:
      thinking.budget_tokens === undefined
        ? null
        : c.int(thinking.budget_tokens, `${path}.thinking.budget_tokens`, 1024),
    toolCallFormat: format,
  };
}

/** `native` (the default) or `xml`, which only chat_completions models may use. */
function parseToolCallFormat(c: Ctx, value: unknown, path: string, apiMode: ApiMode): 'native' | 'xml' {
  const format = value === undefined ? 'native' : c.string(value, path);
  if (format !== 'native' && format !== 'xml') c.fail(path, `"${format}" must be native or xml`);
  if (format === 'xml' && apiMode !== 'chat_completions') c.fail(path, 'xml applies only to api_mode chat_completions');
  return format;
}

function parseCapabilities(c: Ctx, value: unknown, path: string, contextLimit: number | null): ModelCapabilities {
  if (value === undefined) c.fail(path, `is required (keys: ${Object.keys(CAPABILITY_KEYS).join(', ')})`);
  const doc = c.object(value, path, Object.keys(CAPABILITY_KEYS));
  const caps: Record<string, boolean> = {};
  for (const [key, field] of Object.entries(CAPABILITY_KEYS))
    caps[field] = c.bool(doc[key], `${path}.${key}`, field === 'streaming');
  return { ...(caps as Omit<ModelCapabilities, 'maxContextTokens'>), maxContextTokens: contextLimit };
}

function parsePrices(c: Ctx, value: unknown, path: string): PriceTable {
  if (value === undefined)
    c.fail(path, 'is required: per-million-token prices by class (write "0" for a free local model)');
  const doc = c.object(value, path, Object.keys(PRICE_KEYS));
  const prices: Record<string, string> = {};
  for (const [key, field] of Object.entries(PRICE_KEYS)) {
    const v = doc[key];
    if (v === undefined) {
      if (key === 'reasoning') continue;
      if (key === 'cache_write') {
        prices[field] = '0';
        continue;
      }
      c.fail(`${path}.${key}`, 'is required');
    }
    // Quoted strings only: a YAML float would already have lost the decimal the operator wrote.
    if (typeof v !== 'string' || !isDecimalString(v))
      c.fail(`${path}.${key}`, 'must be a quoted decimal string such as "2.50"');
    prices[field] = v;
  }
  return prices as unknown as PriceTable;
}

/** Parses `model_policies` of the registry file: `name: { profile, model, fallbacks? }`. */
export function parsePolicies(
  document: unknown,
  file: string,
  env: Env,
): { version: number; policies: Record<string, ModelPolicyTarget> } {
  const c: Ctx = new Ctx(file, env);
  const doc = c.object(document ?? {}, 'the document', ['version', 'model_policies']);
  const policies: Record<string, ModelPolicyTarget> = {};
  const given = doc.model_policies ?? {};
  if (typeof given !== 'object' || Array.isArray(given))
    c.fail('model_policies', 'must be a mapping of policy name to { profile, model }');
  const raw = given as Doc;
  for (const [name, target] of Object.entries(raw)) {
    if (name.includes(':')) c.fail(`model_policies.${name}`, 'must not contain ":" (that form is <profile>:<model>)');
    const t = c.object(target, `model_policies.${name}`, ['profile', 'model', 'fallbacks']);
    policies[name] = {
      profile: c.string(t.profile, `model_policies.${name}.profile`),
      model: c.string(t.model, `model_policies.${name}.model`),
      ...(t.fallbacks === undefined
        ? {}
        : { fallbacks: parseFallbacks(c, t.fallbacks, `model_policies.${name}.fallbacks`) }),
    };
  }
  return { version: doc.version === undefined ? 1 : c.int(doc.version, 'version', 1), policies };
}

/**
 * A policy's `fallbacks`: an ordered list of `<profile>:<model or alias>` references (ADR 0046).
 * That each names a loaded profile and one of its models is checked by the loader, which knows them.
 */
function parseFallbacks(c: Ctx, value: unknown, path: string): string[] {
  if (!Array.isArray(value)) c.fail(path, 'must be a list of "<profile>:<model or alias>" references');
  const refs = value.map((v, i) => c.string(v, `${path}[${i}]`));
  refs.forEach((ref, i) => {
    if (ref.indexOf(':') <= 0 || ref.endsWith(':'))
      c.fail(`${path}[${i}]`, `"${ref}" must be "<profile>:<model or alias>", e.g. anthropic:haiku`);
    if (refs.indexOf(ref) !== i) c.fail(`${path}[${i}]`, `"${ref}" is listed twice`);
  });
  return refs;
}

const SNAPSHOT_KEYS = ['version', 'as_of', 'reference', 'prices'];
const SNAPSHOT_ENTRY = /^[a-z0-9][a-z0-9_-]*\/\S+$/;

/**
 * Parses the pricing snapshot (`pricing-snapshot.yaml`): `version`, `as_of` (the date the prices
 * were copied), `reference` (where from) and `prices`, a mapping of `<provider>/<model id>` to a
 * price table in the profile format. Every malformed entry is refused naming the file and field.
 */
export function parsePricingSnapshot(document: unknown, file: string, env: Env): PricingSnapshot {
  const c: Ctx = new Ctx(file, env, 'pricing snapshot');
  const doc = c.object(document ?? {}, 'the document', SNAPSHOT_KEYS);
  const version = c.int(doc.version, 'version', 1);
  if (doc.as_of !== undefined) c.string(doc.as_of, 'as_of');
  if (doc.reference !== undefined) c.string(doc.reference, 'reference');
  const given = doc.prices ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    c.fail('prices', 'must be a mapping of "<provider>/<model id>" to { uncached_input, cached_input, output, ... }');
  const prices: Record<string, PriceTable> = {};
  for (const [key, table] of Object.entries(given as Doc)) {
    if (!SNAPSHOT_ENTRY.test(key))
      c.fail(`prices.${key}`, 'must be keyed "<provider>/<model id>", e.g. openai/gpt-5-mini');
    prices[key] = parsePrices(c, table, `prices.${key}`);
  }
  return { version: String(version), source: file, prices };
}
