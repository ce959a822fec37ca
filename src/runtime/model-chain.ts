import { ConfigurationError } from '../domain/errors';
import type { FallbackReason, ModelFallbackFrom } from '../domain/model/fallback';
import type { ModelRoute } from './model-router';

/** A `model.request.started` as the chain needs it to find where a run stands on a new lease. */
export interface StartedCall {
  readonly step: number;
  readonly provider: string;
  readonly model: string;
  readonly fallbackFrom?: ModelFallbackFrom | null;
}

/**
 * The models one lease of a run may call, in order: the route of its model policy, then the policy's
 * `fallbacks` (ADR 0046). The run loop calls `active`; a rate-limit, quota or overloaded failure that
 * spent the active model's retry budget moves the chain to the next fallback that can be routed, for
 * the rest of the run. A new lease resumes on the model the run's log last moved to.
 */
export class ModelChain {
  private position = 0;
  private current: ModelRoute;
  private from: ModelFallbackFrom | null = null;
  private since: number | null = null;

  constructor(
    private readonly primary: ModelRoute,
    private readonly resolveRef: (ref: string) => ModelRoute,
  ) {
    this.current = primary;
  }

  get active(): ModelRoute {
    return this.current;
  }

  /** What the active model replaced (recorded on each of its calls), or null on the policy's own model. */
  get fallbackFrom(): ModelFallbackFrom | null {
    return this.from;
  }

  /** The step of the first call on the active fallback (earlier continuations are not its own); null on the policy's model. */
  get sinceStep(): number | null {
    return this.since;
  }

  private get refs(): readonly string[] {
    return this.primary.fallbacks ?? [];
  }

  hasNext(): boolean {
    return this.position < this.refs.length;
  }

  /**
   * Moves to the next fallback that can be routed, from `step` on. A fallback that cannot be routed
   * now (its key unset, say) is skipped; its refusal is returned in `skipped`. `moved` is false when
   * none is left (the chain stays where it was).
   */
  advance(reason: FallbackReason, step: number): { moved: boolean; skipped: string[] } {
    const skipped: string[] = [];
    const replaced = this.current.model;
    while (this.position < this.refs.length) {
      const ref = this.refs[this.position++];
      try {
        this.current = this.resolveRef(ref);
      } catch (e) {
        if (!(e instanceof ConfigurationError)) throw e;
        skipped.push(`${ref}: ${e.message}`);
        continue;
      }
      this.from = { provider: replaced.provider, model: replaced.model, reason };
      this.since = step;
      return { moved: true, skipped };
    }
    return { moved: false, skipped };
  }

  /**
   * On a new lease: continues on the fallback the run's calls last moved to (the newest run of calls
   * carrying `fallbackFrom` on one model), if it is still one of the policy's fallbacks.
   */
  resume(calls: readonly StartedCall[]): void {
    let last: { call: StartedCall; since: number } | null = null;
    for (const c of calls) {
      if (!c.fallbackFrom) last = null;
      else if (!last || last.call.provider !== c.provider || last.call.model !== c.model)
        last = { call: c, since: c.step };
      else last = { call: c, since: last.since };
    }
    if (!last || !last.call.fallbackFrom) return;
    for (let i = 0; i < this.refs.length; i++) {
      let route: ModelRoute;
      try {
        route = this.resolveRef(this.refs[i]);
      } catch {
        continue;
      }
      if (route.model.provider !== last.call.provider || route.model.model !== last.call.model) continue;
      this.position = i + 1;
      this.current = route;
      this.from = last.call.fallbackFrom;
      this.since = last.since;
      return;
    }
  }
}
