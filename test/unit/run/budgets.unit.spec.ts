import {
  beforeModelCall,
  deadlineCheck,
  modelCallBudget,
  stepBudget,
  toolCallBudget,
  usageBudgets,
} from '../../../src/domain/run/budgets';
import { DEFAULT_LIMITS, type RunLimits } from '../../../src/domain/run/limits';
import { ZERO_USAGE } from '../../../src/domain/run/usage';

const limits = (over: Partial<RunLimits> = {}): RunLimits => ({ ...DEFAULT_LIMITS, ...over });
const NOW = Date.parse('2026-12-03T03:00:00.000Z');

describe('run budgets (pure)', () => {
  it('the deadline holds until its instant, then fails the run with deadline_exceeded', () => {
    expect(deadlineCheck(null, NOW)).toBeNull();
    expect(deadlineCheck('2026-12-03T03:00:00.001Z', NOW)).toBeNull();
    expect(deadlineCheck('2026-12-03T03:00:00.000Z', NOW)).toEqual({
      kind: 'failed',
      reason: 'deadline_exceeded',
      message: 'run passed its deadline 2026-12-03T03:00:00.000Z',
      errorCode: 'deadline_exceeded',
    });
  });

  it('a step past maxSteps fails with max_steps_exceeded; the last allowed step passes', () => {
    expect(stepBudget(3, limits({ maxSteps: 3 }))).toBeNull();
    expect(stepBudget(4, limits({ maxSteps: 3 }))).toMatchObject({
      reason: 'max_steps_exceeded',
      message: 'run reached its limit of 3 steps',
      errorCode: 'budget_exceeded',
    });
  });

  it('before a model call the deadline is checked before the step budget', () => {
    const run = { deadlineAt: '2026-12-03T02:00:00.000Z', limits: limits({ maxSteps: 1 }) };
    expect(beforeModelCall(run, 2, NOW)?.reason).toBe('deadline_exceeded');
    expect(beforeModelCall({ ...run, deadlineAt: null }, 2, NOW)?.reason).toBe('max_steps_exceeded');
    expect(beforeModelCall({ ...run, deadlineAt: null }, 1, NOW)).toBeNull();
  });

  it('model calls count the recorded ones plus the earlier attempts of this step', () => {
    const l = limits({ maxModelCalls: 3 });
    expect(modelCallBudget(2, 1, l)).toBeNull();
    expect(modelCallBudget(2, 2, l)).toMatchObject({
      reason: 'max_model_calls_exceeded',
      errorCode: 'budget_exceeded',
    });
    expect(modelCallBudget(0, 3, l)).toBeNull();
    expect(modelCallBudget(0, 4, l)?.message).toBe('run reached its limit of 3 model calls');
  });

  it('a new tool call is refused once maxToolCalls are used', () => {
    expect(toolCallBudget(1, limits({ maxToolCalls: 2 }))).toBeNull();
    expect(toolCallBudget(2, limits({ maxToolCalls: 2 }))).toMatchObject({
      reason: 'max_tool_calls_exceeded',
      message: 'run reached its limit of 2 tool calls',
    });
  });

  it('input tokens (uncached + cached + cache writes), output tokens and cost fail only when exceeded', () => {
    const usage = {
      ...ZERO_USAGE,
      uncachedInputTokens: 60,
      cachedInputTokens: 30,
      cacheWriteTokens: 10,
      outputTokens: 50,
      cost: '0.5',
    };
    expect(usageBudgets(limits(), usage)).toBeNull();
    expect(usageBudgets(limits({ maxInputTokens: 100 }), usage)).toBeNull();
    expect(usageBudgets(limits({ maxInputTokens: 99 }), usage)).toMatchObject({
      reason: 'token_budget_exceeded',
      message: 'input tokens 100 exceed 99',
    });
    expect(usageBudgets(limits({ maxOutputTokens: 49 }), usage)?.message).toBe('output tokens 50 exceed 49');
    expect(usageBudgets(limits({ maxCost: '0.5' }), usage)).toBeNull();
    expect(usageBudgets(limits({ maxCost: '0.49' }), usage)).toMatchObject({
      reason: 'cost_budget_exceeded',
      message: 'cost 0.5 exceeds 0.49',
      errorCode: 'budget_exceeded',
    });
  });

  it('input tokens are judged before output tokens and cost', () => {
    const usage = { ...ZERO_USAGE, uncachedInputTokens: 10, outputTokens: 10, cost: '1' };
    const all = limits({ maxInputTokens: 1, maxOutputTokens: 1, maxCost: '0' });
    expect(usageBudgets(all, usage)?.message).toBe('input tokens 10 exceed 1');
  });
});
