import type { ToolCallItem } from '../../../src/domain/conversation/items';
import type { CheckpointState } from '../../../src/domain/run/checkpoint';
import { DEFAULT_LIMITS } from '../../../src/domain/run/limits';
import {
  nextStep,
  resumePoint,
  type Observation,
  type PendingCalls,
  type RunState,
} from '../../../src/domain/run/next-step';
import { ZERO_USAGE } from '../../../src/domain/run/usage';

const NOW = Date.parse('2026-12-03T03:00:00.000Z');
const call: ToolCallItem = {
  kind: 'tool_call',
  callId: 'c1',
  name: 'calculator.evaluate',
  arguments: { expression: '2+2' },
};
const pending: PendingCalls = { calls: [call], malformed: [] };

function state(last: Observation<string>, over: Partial<RunState<string>> = {}): RunState<string> {
  return {
    step: 1,
    last,
    stopping: false,
    nowMs: NOW,
    run: { cancelRequestedAt: null, deadlineAt: null, limits: DEFAULT_LIMITS, usage: ZERO_USAGE },
    ...over,
  };
}
const run = (over: Partial<RunState['run']>) => ({ ...state({ kind: 'stopped' }).run, ...over });

describe('nextStep: what the run loop does next (pure)', () => {
  it('a fresh lease calls the model for the next step', () => {
    expect(nextStep(state({ kind: 'resumed', pending: null }, { step: 0 }))).toEqual({ kind: 'call_model', step: 1 });
  });

  it('a lease resumed at pending tool calls runs them in the same step', () => {
    expect(nextStep(state({ kind: 'resumed', pending }, { step: 2 }))).toEqual({ kind: 'run_tools', step: 2, pending });
  });

  it('after the tools the next step calls the model', () => {
    expect(nextStep(state({ kind: 'tools_completed' }))).toEqual({ kind: 'call_model', step: 2 });
  });

  it('before a model call: a stop wins, then a cancel request, then the deadline, then the step budget', () => {
    const tools = { kind: 'tools_completed' } as const;
    const cancelled = run({ cancelRequestedAt: '2026-12-03T02:59:00.000Z', deadlineAt: '2026-12-03T02:00:00.000Z' });
    expect(nextStep(state(tools, { stopping: true, run: cancelled }))).toEqual({ kind: 'stop' });
    expect(nextStep(state(tools, { run: cancelled }))).toEqual({
      kind: 'finish',
      outcome: { kind: 'cancelled', reason: 'cancel requested' },
    });
    const late = run({ deadlineAt: '2026-12-03T02:00:00.000Z', limits: { ...DEFAULT_LIMITS, maxSteps: 1 } });
    expect(nextStep(state(tools, { run: late }))).toMatchObject({
      kind: 'finish',
      outcome: { reason: 'deadline_exceeded' },
    });
    const oneStep = run({ limits: { ...DEFAULT_LIMITS, maxSteps: 1 } });
    expect(nextStep(state(tools, { run: oneStep }))).toMatchObject({
      kind: 'finish',
      outcome: { reason: 'max_steps_exceeded' },
    });
    expect(nextStep(state(tools, { step: 0, run: oneStep }))).toEqual({ kind: 'call_model', step: 1 });
  });

  it('a response with tool calls runs them in its step', () => {
    const responded = { kind: 'model_responded', text: '', pending } as const;
    expect(nextStep(state(responded, { step: 3 }))).toEqual({ kind: 'run_tools', step: 3, pending });
  });

  it('a response with text only completes the run with that text; an empty one fails it', () => {
    expect(nextStep(state({ kind: 'model_responded', text: '4', pending: null }))).toEqual({
      kind: 'finish',
      outcome: { kind: 'completed', text: '4' },
    });
    expect(nextStep(state({ kind: 'model_responded', text: '  \n', pending: null }))).toEqual({
      kind: 'finish',
      outcome: {
        kind: 'failed',
        reason: 'empty_model_turn',
        message: 'the model returned neither text nor tool calls',
        errorCode: 'model_protocol_error',
      },
    });
  });

  it('a response is judged on its usage first: an exceeded budget fails the run even while stopping', () => {
    const over = run({ limits: { ...DEFAULT_LIMITS, maxOutputTokens: 5 }, usage: { ...ZERO_USAGE, outputTokens: 6 } });
    const responded = { kind: 'model_responded', text: '4', pending } as const;
    expect(nextStep(state(responded, { run: over, stopping: true }))).toMatchObject({
      kind: 'finish',
      outcome: { reason: 'token_budget_exceeded' },
    });
    expect(nextStep(state(responded, { stopping: true }))).toEqual({ kind: 'stop' });
  });

  it('a cancel request seen after a response does not end the run before its tools (the next start does)', () => {
    const responded = { kind: 'model_responded', text: '', pending } as const;
    expect(nextStep(state(responded, { run: run({ cancelRequestedAt: 'x' }) }))).toMatchObject({ kind: 'run_tools' });
  });

  it('a suspension, an ended step and a stop pass through', () => {
    expect(nextStep(state({ kind: 'needs_human', suspension: 'approval-1' }, { step: 4 }))).toEqual({
      kind: 'suspend',
      step: 4,
      suspension: 'approval-1',
    });
    const outcome = { kind: 'cancelled', reason: 'cancel requested' } as const;
    expect(nextStep(state({ kind: 'ended', outcome }))).toEqual({ kind: 'finish', outcome });
    expect(nextStep(state({ kind: 'stopped' }))).toEqual({ kind: 'stop' });
  });
});

describe('resumePoint: where a lease picks the run up (pure)', () => {
  const cp = (step: number, phase: CheckpointState['phase']): CheckpointState => ({
    schema: 1,
    step,
    phase,
    pendingToolCalls: phase === 'model_completed' ? [call] : [],
    malformedToolCalls: [],
    providerContinuation: null,
    conversationRange: { fromSequence: 1 },
  });

  it('a fresh run starts before step 1', () => {
    expect(resumePoint(0, null)).toEqual({ step: 0, pending: null });
  });

  it('a model_completed checkpoint of the current step resumes at its pending calls', () => {
    expect(resumePoint(2, cp(2, 'model_completed'))).toEqual({ step: 2, pending });
  });

  it('a tools_completed checkpoint of the current step resumes before the next model call', () => {
    expect(resumePoint(2, cp(2, 'tools_completed'))).toEqual({ step: 2, pending: null });
  });

  it('a model call without its checkpoint is made again under the same step number', () => {
    expect(resumePoint(3, cp(2, 'tools_completed'))).toEqual({ step: 2, pending: null });
    expect(resumePoint(1, null)).toEqual({ step: 0, pending: null });
  });
});
