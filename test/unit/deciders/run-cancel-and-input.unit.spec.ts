import { approvalDecider } from '../../../src/domain/deciders/approval';
import { event, foldState } from '../../../src/domain/deciders/decider';
import { runDecider } from '../../../src/domain/deciders/run';
import { decideCancel } from '../../../src/domain/deciders/run-cancel';
import { decideInput, questionsOf, type RunInputState } from '../../../src/domain/deciders/run-input';
import { stored } from '../../support/decider-spec';
import { given, history, RUN, USER } from './fixtures';

const Q = '33333333-3333-4333-8333-333333333333';
const types = (d: ReturnType<typeof decideCancel>) =>
  d.kind === 'events' ? d.events.map((e) => e.type) : d.refusal.code;
const runAt = (h: ReturnType<typeof history.queued>) => foldState(runDecider, given(h));
const cancel = { kind: 'CancelRunRequest', runId: RUN, principalId: 'alice', reason: null } as const;

describe('cancelling a run (plan §9.3)', () => {
  it('QUEUED and WAITING_FOR_USER: cancelled at once', () => {
    expect(types(decideCancel(cancel, { run: runAt(history.queued()), pendingApprovals: [] }))).toEqual([
      'run.cancelled',
    ]);
    expect(types(decideCancel(cancel, { run: runAt(history.waitingForUser()), pendingApprovals: [] }))).toEqual([
      'run.cancelled',
    ]);
  });
  it('RUNNING: its worker is asked to stop', () =>
    expect(types(decideCancel(cancel, { run: runAt(history.running()), pendingApprovals: [] }))).toEqual([
      'run.cancel_requested',
    ]));
  it('WAITING_FOR_APPROVAL: pending approvals are reaped before run.cancelled', () => {
    const requested = event(
      'approval.requested',
      {
        approvalId: '22222222-2222-4222-8222-222222222222',
        actionKind: 'tool_call',
        principalId: 'alice',
        invocationId: '55555555-5555-4555-8555-555555555555',
        toolName: 't',
        arguments: {},
        actionSummary: 's',
        policyReason: 'r',
        risk: 'high',
        expiresAt: null,
        policyVersion: 'p1',
      },
      { runId: RUN, actorType: 'worker' },
    );
    const pending = {
      state: foldState(approvalDecider, given([requested])),
      runId: RUN,
      actionKind: 'tool_call' as const,
      invocationId: '55555555-5555-4555-8555-555555555555',
      policyVersion: 'p1',
    };
    expect(
      types(decideCancel(cancel, { run: runAt(history.waitingForApproval()), pendingApprovals: [pending] })),
    ).toEqual(['approval.resolved', 'tool.call.denied', 'run.cancelled']);
  });
  it('a terminal run: nothing', () =>
    expect(types(decideCancel(cancel, { run: runAt(history.completed()), pendingApprovals: [] }))).toEqual([]));
});

describe('answering a question (plan §27.3)', () => {
  const asked = history.waitingForUser();
  const state = (over: Partial<RunInputState> = {}): RunInputState => ({
    run: runAt(asked),
    questions: questionsOf(given(asked)),
    invocation: { invocationId: Q, status: 'running' },
    choices: null,
    ...over,
  });
  const input = (text: string, questionId: string | null = null) =>
    ({ kind: 'ProvideInput', runId: RUN, principalId: 'alice', text, questionId }) as const;

  it('records the answer as the invocation result (trust user) and re-queues the run', () => {
    const d = decideInput(input('EU'), state());
    expect(d).toEqual({
      kind: 'events',
      events: [
        event(
          'tool.call.completed',
          { invocationId: Q, result: { answer: 'EU', question_id: Q }, truncated: false, latencyMs: 0, trust: 'user' },
          { runId: RUN, ...USER },
        ),
        event('run.resumed', { reason: 'user_input' }, { runId: RUN, ...USER }),
      ],
    });
  });

  it('the same answer again writes nothing; a different one conflicts', () => {
    const answered = [
      ...asked,
      event(
        'tool.call.completed',
        { invocationId: Q, result: { answer: 'EU', question_id: Q }, truncated: false, latencyMs: 0, trust: 'user' },
        { runId: RUN, ...USER },
      ),
    ];
    const s = state({ questions: questionsOf(answered.map((e) => stored(e))) });
    expect(decideInput(input('EU'), s)).toEqual({ kind: 'events', events: [] });
    expect(types(decideInput(input('US'), s))).toBe('conflict');
  });

  it('refuses an unknown question, a run not waiting, and an answer outside the choices', () => {
    expect(types(decideInput(input('EU', 'nope'), state()))).toBe('not_found');
    expect(types(decideInput(input('EU'), state({ run: runAt(history.running()), questions: [] })))).toBe('conflict');
    const d = decideInput(input('Mars'), state({ choices: ['EU', 'US'] }));
    expect(d.kind === 'refused' && [d.refusal.code, d.refusal.message]).toEqual([
      'validation_error',
      'the answer must be one of: EU, US',
    ]);
  });
});
