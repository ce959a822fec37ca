import type { ResolvedModel } from '../domain/model/model-events';
import { ConfigurationError } from '../domain/errors';
import type { ModelProvider } from '../ports/model-provider';

/**
 * Resolves a model policy to a provider and model, once per run (the run is pinned to it).
 * Policies are `provider:model` (e.g. `fake:calculator_then_answer`) or a named alias such as `demo`.
 */
export class ModelRouter {
  private readonly providers = new Map<string, ModelProvider>();
  constructor(
    providers: readonly ModelProvider[],
    private readonly aliases: Readonly<Record<string, string>> = { demo: 'demo:demo' },
  ) {
    for (const p of providers) this.providers.set(p.name, p);
  }

  resolve(policy: string): { provider: ModelProvider; model: ResolvedModel } {
    const target = this.aliases[policy] ?? policy;
    const sep = target.indexOf(':');
    if (sep <= 0) {
      throw new ConfigurationError(`model policy "${policy}" is not "provider:model" or a known alias (${Object.keys(this.aliases).join(', ')})`, { policy });
    }
    const providerName = target.slice(0, sep);
    const provider = this.providers.get(providerName);
    if (!provider) {
      throw new ConfigurationError(`model policy "${policy}" names provider "${providerName}", which is not configured (configured: ${[...this.providers.keys()].join(', ')})`, { policy });
    }
    return { provider, model: { provider: providerName, model: target.slice(sep + 1), contextLimit: null } };
  }

  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
  }
}
