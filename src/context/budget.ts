import { ContextOverflow } from '../domain/errors';

/**
 * The context budget allocator (plan §11.3, ADR-0017). Every class but history has an absolute
 * cap that does not depend on the window; history is the only class that scales with the window:
 * it gets whatever the measured fixed classes and the output reserve leave.
 */
export interface BudgetCaps {
  /** Platform policy (Region A). */
  readonly platform: number;
  /** Agent instructions and skill catalog (Region A). */
  readonly agent: number;
  /** Tool definitions (Region A). */
  readonly tools: number;
  /** Region B's runtime note: date, principal scope, working state. */
  readonly workingState: number;
  /** Retrieved memory / knowledge (none is retrieved yet; the class exists so it can yield first). */
  readonly retrieved: number;
  /** The compaction summary (part of history, capped on its own so it cannot crowd out dialogue). */
  readonly summary: number;
  /** Output reserve: the most the request asks the model to write (also at most a quarter of the window). */
  readonly reserveOutput: number;
  /** The floor the output reserve may shrink to under pressure. */
  readonly reserveOutputFloor: number;
}

export const DEFAULT_CAPS: BudgetCaps = {
  platform: 2_000,
  agent: 8_000,
  tools: 16_000,
  workingState: 2_000,
  retrieved: 8_000,
  summary: 4_000,
  reserveOutput: 8_192,
  reserveOutputFloor: 256,
};

/** The measured size of everything but history, in tokens. */
export interface FixedUsage {
  readonly platform: number;
  readonly agent: number;
  readonly tools: number;
  readonly workingState: number;
  readonly retrieved: number;
  readonly summary: number;
}

/** The plan's ContextBudget (§11.3) plus the Region B parts the engine also measures. */
export interface ContextBudget {
  readonly totalTokens: number | null;
  readonly platformTokens: number;
  readonly agentTokens: number;
  readonly toolTokens: number;
  readonly workingStateTokens: number;
  readonly retrievedContextTokens: number;
  readonly summaryTokens: number;
  /** What is left for dialogue (including the current message and the active tool loop). */
  readonly historyTokens: number;
  readonly reserveOutputTokens: number;
}

/**
 * The yield order under pressure, first to give way first (docs/adr/0017):
 * 1. retrieved context (dropped down to nothing);
 * 2. older dialogue (compacted into the summary, at most two compactions per step);
 * 3. the output reserve (shrinks from the requested maximum to its floor);
 * then the request fails with ContextOverflow. Region A (platform, agent, tools) never yields within
 * a run - shrinking it would break the cached prefix - and neither do the current user message and
 * the latest tool results.
 */
export const YIELD_ORDER = ['retrieved', 'history', 'reserve_output'] as const;

/**
 * Allocates a window. `requestedOutput` is the agent's maximum output tokens (null: the caps'
 * default). A null window (the model's profile declares none) allocates without enforcement.
 * Throws ContextOverflow when a capped class is over its cap or the fixed classes alone do not fit.
 */
export function allocate(
  window: number | null,
  used: FixedUsage,
  requestedOutput: number | null,
  caps: BudgetCaps = DEFAULT_CAPS,
): ContextBudget {
  for (const cls of ['platform', 'agent', 'tools', 'workingState'] as const) {
    if (used[cls] > caps[cls]) {
      throw new ContextOverflow(`context class "${cls}" needs ${used[cls]} tokens; its cap is ${caps[cls]}`, {
        class: cls,
        tokens: used[cls],
        cap: caps[cls],
      });
    }
  }
  // The output reserve is capped absolutely and, so a small window still leaves room for input,
  // at a quarter of the window (never below its floor).
  const quarter = window === null ? Infinity : Math.max(caps.reserveOutputFloor, Math.floor(window / 4));
  const reserve = Math.min(requestedOutput ?? caps.reserveOutput, caps.reserveOutput, quarter);
  const retrieved = Math.min(used.retrieved, caps.retrieved);
  const summary = Math.min(used.summary, caps.summary);
  const base = {
    totalTokens: window,
    platformTokens: used.platform,
    agentTokens: used.agent,
    toolTokens: used.tools,
    workingStateTokens: used.workingState,
    retrievedContextTokens: retrieved,
    summaryTokens: summary,
    reserveOutputTokens: reserve,
  };
  if (window === null) return { ...base, historyTokens: Number.MAX_SAFE_INTEGER };
  const fixed = used.platform + used.agent + used.tools + used.workingState + summary;
  const floor = Math.min(reserve, caps.reserveOutputFloor);
  if (fixed + floor > window) {
    throw new ContextOverflow(
      `the fixed context (${fixed} tokens) and the minimum output reserve (${floor}) exceed the window of ${window} tokens`,
      { window, fixed, reserve: floor },
    );
  }
  // 1. retrieved context yields first: it only gets what is left after a minimal history share.
  const afterFixed = window - fixed - reserve;
  const retrievedFits = Math.max(0, Math.min(retrieved, Math.floor(afterFixed / 2)));
  return {
    ...base,
    retrievedContextTokens: retrievedFits,
    historyTokens: Math.max(0, afterFixed - retrievedFits),
  };
}

/**
 * The last step of the yield order: shrink the output reserve so that `needed` history tokens fit,
 * never below the floor. Returns the shrunk budget, or null when even the floor does not make it fit.
 */
export function yieldReserve(
  budget: ContextBudget,
  needed: number,
  caps: BudgetCaps = DEFAULT_CAPS,
): ContextBudget | null {
  if (budget.totalTokens === null || needed <= budget.historyTokens) return budget;
  const short = needed - budget.historyTokens;
  const floor = Math.min(budget.reserveOutputTokens, caps.reserveOutputFloor);
  if (budget.reserveOutputTokens - short < floor) return null;
  return {
    ...budget,
    reserveOutputTokens: budget.reserveOutputTokens - short,
    historyTokens: needed,
  };
}
