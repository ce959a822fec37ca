import {
  missingCapabilities,
  OFFLINE_CAPABILITIES,
  type ModelCapabilities,
  type ModelRequirements,
} from '../domain/model/capabilities';
import type { ResolvedModel } from '../domain/model/model-events';
import {
  EMPTY_REGISTRY,
  findProfileModel,
  modelBilling,
  type ProfileModel,
  type ProviderProfile,
  type ProviderRegistry,
} from '../domain/model/provider-profile';
import { ConfigurationError } from '../domain/errors';
import type { Billing } from '../domain/run/usage';
import type { ModelProvider } from '../ports/model-provider';

/** A provider profile bound to its adapter, or the reason it has none (e.g. its key is not set). */
export interface ProfileBinding {
  readonly profile: ProviderProfile;
  readonly provider: ModelProvider | null;
  /** Why `provider` is null, naming the profile and the missing piece. */
  readonly unavailable?: string;
}

/** Everything a run needs to know about its model: resolved once, at the start of the run. */
export interface ModelRoute {
  readonly provider: ModelProvider;
  readonly model: ResolvedModel;
  readonly capabilities: ModelCapabilities;
  /** How the call is priced when the provider reports no cost (plan §6.5 precedence). */
  readonly billing: Billing;
  /**
   * A named policy's ordered `fallbacks` (`<profile>:<model>` references, ADR 0046), resolved when
   * the run falls back to one; empty for every other policy and for a fallback's own route.
   */
  readonly fallbacks?: readonly string[];
}

export interface ModelRouterOptions {
  /** Named shortcuts for offline policies (`demo` -> `demo:demo`). */
  readonly aliases?: Readonly<Record<string, string>>;
  readonly registry?: ProviderRegistry;
  readonly bindings?: readonly ProfileBinding[];
}

/**
 * Resolves a model policy to a provider, model, capabilities, context limit and price table, once
 * per run (the run is pinned to it, plan §10.5). Policies are, in order:
 *   - an alias such as `demo`;
 *   - a named policy from the provider registry (`balanced` -> profile + model);
 *   - `<offline provider>:<name>` (`fake:calculator_then_answer`);
 *   - `<profile>:<model or alias>` (`openai:default`).
 * A profile whose credential is missing, an unknown model, or a model without a capability the run
 * needs is refused with a ConfigurationError naming the profile and the missing piece.
 */
export class ModelRouter {
  private readonly offline = new Map<string, ModelProvider>();
  private readonly bindings = new Map<string, ProfileBinding>();
  private readonly aliases: Readonly<Record<string, string>>;
  readonly registry: ProviderRegistry;

  constructor(offlineProviders: readonly ModelProvider[], options: ModelRouterOptions = {}) {
    for (const p of offlineProviders) this.offline.set(p.name, p);
    for (const b of options.bindings ?? []) this.bindings.set(b.profile.name, b);
    this.aliases = options.aliases ?? { demo: 'demo:demo' };
    this.registry = options.registry ?? EMPTY_REGISTRY;
  }

  resolve(policy: string, needs: ModelRequirements = {}): ModelRoute {
    const named = this.registry.policies[policy];
    if (named) {
      const route = this.profileRoute(policy, named.profile, named.model, needs);
      return named.fallbacks?.length ? { ...route, fallbacks: named.fallbacks } : route;
    }
    const target = this.aliases[policy] ?? policy;
    const sep = target.indexOf(':');
    if (sep <= 0) {
      const known = [...Object.keys(this.aliases), ...Object.keys(this.registry.policies)];
      throw new ConfigurationError(
        `model policy "${policy}" is not "provider:model" or a known policy (${known.join(', ')})`,
        { policy },
      );
    }
    const providerName = target.slice(0, sep);
    const modelName = target.slice(sep + 1);
    const offline = this.offline.get(providerName);
    if (offline) {
      return {
        provider: offline,
        model: { provider: providerName, model: modelName, contextLimit: offline.contextLimitOf?.(modelName) ?? null },
        capabilities: OFFLINE_CAPABILITIES,
        billing: { kind: 'free' },
      };
    }
    if (this.bindings.has(providerName)) return this.profileRoute(policy, providerName, modelName, needs);
    const configured = [...this.offline.keys(), ...this.bindings.keys()];
    throw new ConfigurationError(
      `model policy "${policy}" names provider "${providerName}", which is not configured (configured: ${configured.join(', ')})`,
      { policy },
    );
  }

  /** Refuses (at startup) an agent whose model policy cannot be routed or lacks what the agent needs. */
  assertRoutable(agent: {
    readonly id: string;
    readonly modelPolicy: string;
    readonly enabledTools: readonly string[];
  }): void {
    try {
      this.resolve(agent.modelPolicy, { toolCalling: agent.enabledTools.length > 0 });
    } catch (e) {
      if (e instanceof ConfigurationError) {
        throw new ConfigurationError(`agent "${agent.id}" cannot start: ${e.message}`, {
          ...e.details,
          agentId: agent.id,
        });
      }
      throw e;
    }
  }

  async close(): Promise<void> {
    const providers = [
      ...this.offline.values(),
      ...[...this.bindings.values()].flatMap((b) => (b.provider ? [b.provider] : [])),
    ];
    await Promise.all(providers.map((p) => p.close()));
  }

  /** Plan §6.5 below the provider-reported costs: catalog price > pricing snapshot > configured override. */
  private billingOf(profile: ProviderProfile, model: ProfileModel): Billing {
    const billing = modelBilling(profile, model, this.registry.pricingSnapshot);
    if (!billing) {
      throw new ConfigurationError(
        `provider profile "${profile.name}" (${profile.source}) has no prices for model "${model.id}": set models[].prices, add "${profile.name}/${model.id}" to the pricing snapshot, or set models[].price_override`,
        { profile: profile.name, model: model.id },
      );
    }
    return billing;
  }

  private profileRoute(policy: string, profileName: string, modelName: string, needs: ModelRequirements): ModelRoute {
    const binding = this.bindings.get(profileName);
    if (!binding) {
      throw new ConfigurationError(
        `model policy "${policy}" names provider profile "${profileName}", which is not loaded`,
        { policy, profile: profileName },
      );
    }
    const { profile } = binding;
    const model = findProfileModel(profile, modelName);
    if (!model) {
      const names = profile.models.flatMap((m) => [m.id, ...m.aliases]).join(', ');
      throw new ConfigurationError(
        `model policy "${policy}": provider profile "${profile.name}" (${profile.source}) has no model or alias "${modelName}" (has: ${names})`,
        {
          policy,
          profile: profile.name,
        },
      );
    }
    if (!binding.provider) {
      throw new ConfigurationError(binding.unavailable ?? `provider profile "${profile.name}" is not available`, {
        policy,
        profile: profile.name,
      });
    }
    const missing = missingCapabilities(model.capabilities, needs);
    if (missing.length > 0) {
      throw new ConfigurationError(
        `model policy "${policy}": model "${model.id}" of provider profile "${profile.name}" lacks ${missing.join(', ')}, which this run needs (set it under capabilities in ${profile.source} only if the model really supports it)`,
        { policy, profile: profile.name, missing },
      );
    }
    return {
      provider: binding.provider,
      model: {
        provider: profile.name,
        model: model.id,
        contextLimit: model.contextLimit,
        profileVersion: profile.version,
        registryVersion: this.registry.version,
      },
      capabilities: model.capabilities,
      billing: this.billingOf(profile, model),
    };
  }
}
