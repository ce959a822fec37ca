import type { RunLimits } from './limits';
import { failedWith, type RunFailedOutcome } from './outcome';
import { totalInputTokens, type RunUsage } from './usage';

/**
 * The run's budgets (plan §6.5) as pure checks: each answers the failure that ends the run, or null
 * when the run may go on. The run loop asks them at fixed points (before a model call, before each
 * model call attempt, before a new tool call, after a model response) with the run row it holds.
 */

/** The wall-clock deadline fixed when the run first started. */
export function deadlineCheck(deadlineAt: string | null, nowMs: number): RunFailedOutcome | null {
  if (!deadlineAt || nowMs < Date.parse(deadlineAt)) return null;
  return failedWith('deadline_exceeded', `run passed its deadline ${deadlineAt}`, 'deadline_exceeded');
}

/** `step` is the step about to start (1-based). */
export function stepBudget(step: number, limits: RunLimits): RunFailedOutcome | null {
  if (step <= limits.maxSteps) return null;
  return failedWith('max_steps_exceeded', `run reached its limit of ${limits.maxSteps} steps`, 'budget_exceeded');
}

/** What is checked before a step's model call: the deadline, then the step count. */
export function beforeModelCall(
  run: { readonly deadlineAt: string | null; readonly limits: RunLimits },
  step: number,
  nowMs: number,
): RunFailedOutcome | null {
  return deadlineCheck(run.deadlineAt, nowMs) ?? stepBudget(step, run.limits);
}

/**
 * Before each attempt of a model call: `recorded` model calls are in the run row, and the earlier
 * attempts of this step (`attempt - 1`) are not yet.
 */
export function modelCallBudget(recorded: number, attempt: number, limits: RunLimits): RunFailedOutcome | null {
  if (recorded + (attempt - 1) < limits.maxModelCalls) return null;
  return failedWith(
    'max_model_calls_exceeded',
    `run reached its limit of ${limits.maxModelCalls} model calls`,
    'budget_exceeded',
  );
}

/** Before a tool call not proposed yet: `used` calls are already counted. */
export function toolCallBudget(used: number, limits: RunLimits): RunFailedOutcome | null {
  if (used < limits.maxToolCalls) return null;
  return failedWith(
    'max_tool_calls_exceeded',
    `run reached its limit of ${limits.maxToolCalls} tool calls`,
    'budget_exceeded',
  );
}

/** Input tokens, output tokens and cost, on the usage after the latest model response. */
export function usageBudgets(limits: RunLimits, usage: RunUsage): RunFailedOutcome | null {
  const input = totalInputTokens(usage);
  if (limits.maxInputTokens !== null && input > limits.maxInputTokens)
    return failedWith(
      'token_budget_exceeded',
      `input tokens ${input} exceed ${limits.maxInputTokens}`,
      'budget_exceeded',
    );
  if (limits.maxOutputTokens !== null && usage.outputTokens > limits.maxOutputTokens) {
    const message = `output tokens ${usage.outputTokens} exceed ${limits.maxOutputTokens}`;
    return failedWith('token_budget_exceeded', message, 'budget_exceeded');
  }
  if (limits.maxCost !== null && Number(usage.cost) > Number(limits.maxCost))
    return failedWith('cost_budget_exceeded', `cost ${usage.cost} exceeds ${limits.maxCost}`, 'budget_exceeded');
  return null;
}
