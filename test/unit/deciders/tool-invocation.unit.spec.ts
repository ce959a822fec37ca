import { event } from '../../../src/domain/deciders/decider';
import {
  toolInvocationDecider,
  type ToolInvocationCommand,
  type ToolInvocationStatus,
} from '../../../src/domain/deciders/tool-invocation';
import type { NewEvent } from '../../../src/domain/events/payloads';
import { deciderSpec } from '../../support/decider-spec';
import { given, RUN, WORKER } from './fixtures';

const spec = deciderSpec(toolInvocationDecider);
const INV = '55555555-5555-4555-8555-555555555555';
const w = { runId: RUN, actorType: 'worker' as const };
const base = { runId: RUN, invocationId: INV, actor: WORKER };
const propose: ToolInvocationCommand = {
  ...base,
  kind: 'ProposeToolCall',
  step: 1,
  callId: 'c1',
  toolName: 'demo.calculator',
  toolVersion: '1',
  arguments: { expression: '1+1' },
  argumentsHash: 'h',
  idempotencyKey: 'k',
};
const cmds: Record<string, ToolInvocationCommand> = {
  authorize: { ...base, kind: 'AuthorizeToolCall', decision: 'allow', reasonCode: 'ok', policyVersion: 'p1' },
  deny: { ...base, kind: 'DenyToolCall', reasonCode: 'missing_scope', explanation: 'no', policyVersion: 'p1' },
  start: { ...base, kind: 'StartToolCall' },
  effect: { ...base, kind: 'MarkEffectStarted' },
  complete: {
    ...base,
    kind: 'CompleteToolCall',
    result: { value: 2 },
    truncated: false,
    latencyMs: 3,
    trust: 'internal_tool',
  },
  fail: { ...base, kind: 'FailToolCall', errorCode: 'tool_timeout', message: 't', retryable: true, latencyMs: 9 },
  uncertain: { ...base, kind: 'MarkUncertain', reason: 'stopped past the watermark' },
};
const ev = {
  proposed: event(
    'tool.call.proposed',
    {
      invocationId: INV,
      step: 1,
      callId: 'c1',
      toolName: 'demo.calculator',
      toolVersion: '1',
      arguments: { expression: '1+1' },
      argumentsHash: 'h',
      idempotencyKey: 'k',
    },
    w,
  ),
  authorized: event(
    'tool.call.authorized',
    { invocationId: INV, decision: 'allow', reasonCode: 'ok', policyVersion: 'p1' },
    w,
  ),
  started: event('tool.call.started', { invocationId: INV }, w),
  effect: event('tool.call.effect_started', { invocationId: INV }, w),
  completed: event(
    'tool.call.completed',
    { invocationId: INV, result: { value: 2 }, truncated: false, latencyMs: 3, trust: 'internal_tool' },
    w,
  ),
  uncertain: event('tool.call.uncertain', { invocationId: INV, reason: 'stopped past the watermark' }, w),
  approvalRequested: event(
    'approval.requested',
    {
      approvalId: '22222222-2222-4222-8222-222222222222',
      actionKind: 'tool_call',
      principalId: 'alice',
      invocationId: INV,
      toolName: 'demo.external_write',
      arguments: {},
      actionSummary: 's',
      policyReason: 'r',
      risk: 'high',
      expiresAt: null,
      policyVersion: 'p1',
    },
    w,
  ),
};
const at: Record<ToolInvocationStatus, NewEvent[]> = {
  proposed: [ev.proposed],
  authorized: [ev.proposed, ev.authorized],
  waiting_for_approval: [ev.proposed, ev.approvalRequested],
  running: [ev.proposed, ev.authorized, ev.started],
  succeeded: [ev.proposed, ev.authorized, ev.started, ev.completed],
  failed: [
    ev.proposed,
    event('tool.call.failed', { invocationId: INV, errorCode: 'x', message: 'x', retryable: false, latencyMs: 0 }, w),
  ],
  denied: [
    ev.proposed,
    event('tool.call.denied', { invocationId: INV, reasonCode: 'x', explanation: 'x', policyVersion: 'p' }, w),
  ],
  uncertain: [ev.proposed, ev.authorized, ev.started, ev.effect, ev.uncertain],
};

describe('tool invocation decider (plan §8.4)', () => {
  it('the happy path: proposed, authorized, started, effect watermark, completed', () => {
    spec.given([]).when(propose).then([ev.proposed]);
    spec.given(given(at.proposed)).when(cmds.authorize).then([ev.authorized]);
    spec.given(given(at.authorized)).when(cmds.start).then([ev.started]);
    spec.given(given(at.running)).when(cmds.effect).then([ev.effect]);
    spec.given(given(at.running)).when(cmds.complete).then([ev.completed]);
  });

  it('an approved call is authorized from WAITING_FOR_APPROVAL', () => {
    expect(spec.given(given(at.waiting_for_approval)).state.status).toBe('waiting_for_approval');
    spec.given(given(at.waiting_for_approval)).when(cmds.authorize).then([ev.authorized]);
  });

  it('a call past its watermark becomes UNCERTAIN; a human retry starts it again', () => {
    spec
      .given(given([...at.running, ev.effect]))
      .when(cmds.uncertain)
      .then([ev.uncertain]);
    spec.given(given(at.uncertain)).when(cmds.start).then([ev.started]);
  });

  it('a running program held by a bridged call for a human stands authorized again, and starts again', () => {
    const suspend: ToolInvocationCommand = {
      ...base,
      kind: 'SuspendToolCall',
      reason: 'bridged_call_awaiting_approval',
      awaitingInvocationId: '66666666-6666-4666-8666-666666666666',
      approvalId: '22222222-2222-4222-8222-222222222222',
    };
    const suspended = event(
      'tool.call.suspended',
      {
        invocationId: INV,
        reason: 'bridged_call_awaiting_approval',
        awaitingInvocationId: '66666666-6666-4666-8666-666666666666',
        approvalId: '22222222-2222-4222-8222-222222222222',
      },
      w,
    );
    spec
      .given(given([...at.running, ev.effect]))
      .when(suspend)
      .then([suspended]);
    const after = spec.given(given([...at.running, ev.effect, suspended]));
    expect(after.state.status).toBe('authorized');
    after.when(cmds.start).then([ev.started]);
    // Only a running program can be held.
    for (const status of ['proposed', 'authorized', 'waiting_for_approval', 'succeeded'] as const)
      spec.given(given(at[status])).when(suspend).thenRefuses('invalid_state_transition');
  });

  it('a safe call an interrupted lease started is started again', () =>
    spec.given(given(at.running)).when(cmds.start).then([ev.started]));

  it('skill.load records the skill it loaded with its completion', () => {
    const skill = { name: 's', version: '1', sha256: 'a'.repeat(64), source: 'package' as const, missingTools: [] };
    spec
      .given(given(at.running))
      .when({ ...(cmds.complete as Extract<ToolInvocationCommand, { kind: 'CompleteToolCall' }>), loadedSkill: skill })
      .then([ev.completed, event('run.skill.loaded', { invocationId: INV, ...skill }, w)]);
    spec
      .given(given(at.succeeded))
      .when({ ...base, kind: 'RecordSkillLoaded', skill })
      .then([event('run.skill.loaded', { invocationId: INV, ...skill }, w)]);
  });

  it.each(['proposed', 'authorized', 'waiting_for_approval', 'running', 'uncertain'] as const)(
    'denial and failure end an open call (%s)',
    (status) => {
      expect(spec.given(given(at[status])).when(cmds.deny).decision.kind).toBe('events');
      expect(spec.given(given(at[status])).when(cmds.fail).decision.kind).toBe('events');
    },
  );

  it.each(['succeeded', 'failed', 'denied'] as const)('a recorded outcome is final (%s)', (status) => {
    const s = spec.given(given(at[status]));
    for (const k of ['authorize', 'deny', 'start', 'effect', 'complete', 'fail', 'uncertain'])
      s.when(cmds[k]).thenRefuses('invalid_state_transition', /is (succeeded|failed|denied)/);
  });

  it('refuses out-of-order steps', () => {
    spec.given(given(at.proposed)).when(propose).thenRefuses('invalid_state_transition');
    spec.given(given(at.proposed)).when(cmds.start).thenRefuses('invalid_state_transition');
    spec.given(given(at.proposed)).when(cmds.complete).thenRefuses('invalid_state_transition');
    spec.given(given(at.authorized)).when(cmds.effect).thenRefuses('invalid_state_transition');
    spec.given([]).when(cmds.authorize).thenRefuses('invalid_state_transition');
  });
});
