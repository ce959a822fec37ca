import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, YAMLError } from 'yaml';
import { ConfigurationError } from '../../../domain/errors';
import {
  EMPTY_PRICING_SNAPSHOT,
  findProfileModel,
  modelBilling,
  type ModelPolicyTarget,
  type PricingSnapshot,
  type ProviderProfile,
  type ProviderRegistry,
} from '../../../domain/model/provider-profile';
import { parsePolicies, parsePricingSnapshot, parseProfile } from './profile-parser';

/**
 * Loads the provider registry from a directory of versioned YAML (normally `config/providers/`):
 * one `<profile>.yaml` per provider profile plus `registry.yaml` with the named model policies.
 * A missing directory is an empty registry (the offline providers still work). Anything invalid
 * is refused at startup with a message naming the file and the field.
 */

export const REGISTRY_FILE = 'registry.yaml';
/** The documented pricing snapshot (plan §6.5): prices for profile models that list none. */
export const PRICING_SNAPSHOT_FILE = 'pricing-snapshot.yaml';

type Env = Readonly<Record<string, string | undefined>>;

export function loadProviderRegistry(dir: string, env: Env = process.env): ProviderRegistry {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
      .sort();
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT')
      return { version: 'none', profiles: [], policies: {}, pricingSnapshot: EMPTY_PRICING_SNAPSHOT };
    throw error;
  }
  const hash = createHash('sha256');
  const profiles: ProviderProfile[] = [];
  let policies: ReturnType<typeof parsePolicies> = { version: 1, policies: {} };
  let pricingSnapshot: PricingSnapshot = EMPTY_PRICING_SNAPSHOT;
  for (const f of files) {
    const file = join(dir, f);
    const text = readFileSync(file, 'utf8');
    hash.update(f).update('\u0000').update(text).update('\u0000');
    const doc = parseYaml(text, file);
    if (f === REGISTRY_FILE) policies = parsePolicies(doc, file, env);
    else if (f === PRICING_SNAPSHOT_FILE) pricingSnapshot = parsePricingSnapshot(doc, file, env);
    else profiles.push(parseProfile(doc, file, env));
  }
  const byName = new Map<string, ProviderProfile>();
  for (const p of profiles) {
    const other = byName.get(p.name);
    if (other)
      throw new ConfigurationError(
        `provider profile name "${p.name}" is declared twice: ${other.source} and ${p.source}`,
        { profile: p.name },
      );
    byName.set(p.name, p);
  }
  // Every model must be priced by something (plan §6.5): its own prices, the snapshot, or its override.
  for (const p of profiles) {
    p.models.forEach((m, i) => {
      if (!modelBilling(p, m, pricingSnapshot)) {
        throw new ConfigurationError(
          `provider profile ${p.source}: models[${i}].prices is required: model "${m.id}" has no prices, no entry "${p.name}/${m.id}" in ${join(dir, PRICING_SNAPSHOT_FILE)} and no price_override (write "0" prices for a free local model)`,
          { file: p.source, field: `models[${i}].prices` },
        );
      }
    });
  }
  for (const [name, target] of Object.entries(policies.policies)) {
    const profile = byName.get(target.profile);
    if (!profile) {
      throw new ConfigurationError(
        `model policy "${name}" in ${join(dir, REGISTRY_FILE)} names profile "${target.profile}", which does not exist (profiles: ${[...byName.keys()].join(', ') || 'none'})`,
        { policy: name },
      );
    }
    if (!findProfileModel(profile, target.model)) {
      throw new ConfigurationError(
        `model policy "${name}" names model "${target.model}", which profile "${profile.name}" (${profile.source}) does not list (models and aliases: ${modelNames(profile)})`,
        { policy: name },
      );
    }
    checkFallbacks(name, target, byName, join(dir, REGISTRY_FILE));
  }
  return {
    version: `r${policies.version}-${hash.digest('hex').slice(0, 12)}`,
    profiles,
    policies: policies.policies,
    pricingSnapshot,
  };
}

/**
 * Every fallback of a policy names a loaded profile and one of its models or aliases, and not the
 * policy's own model (ADR 0046); a bad one is refused naming the file and the field.
 */
function checkFallbacks(
  name: string,
  target: ModelPolicyTarget,
  byName: ReadonlyMap<string, ProviderProfile>,
  file: string,
): void {
  const own = byName.get(target.profile);
  const seen = new Set([`${target.profile}:${(own && findProfileModel(own, target.model)?.id) ?? target.model}`]);
  (target.fallbacks ?? []).forEach((ref, i) => {
    const field = `model_policies.${name}.fallbacks[${i}]`;
    const refuse = (problem: string) =>
      new ConfigurationError(`model policy "${name}" in ${file}: ${field} ${problem}`, { file, field, policy: name });
    const sep = ref.indexOf(':');
    const [profileName, modelName] = [ref.slice(0, sep), ref.slice(sep + 1)];
    const profile = byName.get(profileName);
    if (!profile) {
      const known = [...byName.keys()].join(', ') || 'none';
      throw refuse(`"${ref}" names profile "${profileName}", which does not exist (profiles: ${known})`);
    }
    const model = findProfileModel(profile, modelName);
    if (!model) {
      throw refuse(
        `"${ref}" names model "${modelName}", which profile "${profile.name}" (${profile.source}) does not list (models and aliases: ${modelNames(profile)})`,
      );
    }
    const key = `${profile.name}:${model.id}`;
    if (seen.has(key)) throw refuse(`"${ref}" is the policy's own model or an earlier fallback (${key})`);
    seen.add(key);
  });
}

export function modelNames(profile: ProviderProfile): string {
  return profile.models.flatMap((m) => [m.id, ...m.aliases]).join(', ');
}

function parseYaml(text: string, file: string): unknown {
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof YAMLError)
      throw new ConfigurationError(`provider profile ${file} is not valid YAML: ${error.message}`, { file });
    throw error;
  }
}
