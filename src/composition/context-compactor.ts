import type { Settings } from '../config/settings';
import type { Compactor } from '../context/compactor';
import type { ContextEngineOptions } from '../context/engine';
import { ModelAssistedCompactor } from '../context/model-compactor';
import type { IdFactory } from '../ports/clock';
import type { ModelRouter } from '../runtime/model-router';

/**
 * The compactor selection of `CONTEXT_COMPACTOR` (docs/adr/0017-context-engine.md): `extractive`
 * (default) leaves the engine's deterministic compactor; `model` asks a model for the summary through
 * the provider port - the route of `CONTEXT_COMPACTOR_MODEL_POLICY`, else the run's own model - and
 * falls back to the extractive summary (with `fallbackReason`) on malformed output or a failed call.
 */
export function compactorOptions(
  settings: Pick<Settings, 'contextCompactor' | 'contextCompactorModelPolicy'>,
  router: Pick<ModelRouter, 'resolve'>,
  ids: Pick<IdFactory, 'uuid'>,
): Pick<ContextEngineOptions, 'compactorFor'> {
  if (settings.contextCompactor !== 'model') return {};
  const fixed = settings.contextCompactorModelPolicy;
  // Fail at startup on a policy that cannot be routed, not at the first compaction.
  if (fixed) router.resolve(fixed);
  const cache = new Map<string, Compactor>();
  return {
    compactorFor: (model, modelPolicy) => {
      const policy = fixed ?? modelPolicy;
      let c = cache.get(policy);
      if (!c) {
        const route = router.resolve(policy);
        c = new ModelAssistedCompactor(route.provider, route.model, { newAttemptId: () => ids.uuid() });
        cache.set(policy, c);
      }
      return c;
    },
  };
}
