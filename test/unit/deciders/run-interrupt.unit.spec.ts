import { event } from '../../../src/domain/deciders/decider';
import { runDecider } from '../../../src/domain/deciders/run';
import { decideInterrupt, decideInterruptedEnd, type InterruptState } from '../../../src/domain/deciders/run-interrupt';
import { sessionDecider, type SessionCommand } from '../../../src/domain/deciders/session';
import { deciderSpec } from '../../support/decider-spec';
import { given, history, LIMITS, RUN, USER, WORKER } from './fixtures';

const B = '22222222-aaaa-4aaa-8aaa-222222222222';
const INV = '55555555-aaaa-4aaa-8aaa-555555555555';
const run = deciderSpec(runDecider);
const stateOf = (events: ReturnType<typeof history.running>) =>
  given(events).reduce(runDecider.evolve, runDecider.initialState());
const cmd = { runId: RUN, byRunId: B, mode: 'interrupt' as const, actor: USER, reason: null };
const w = { runId: RUN, actorType: 'worker' as const };

describe('interrupting a run for a newer message (issue 33)', () => {
  it('asks a RUNNING run to stop once; a terminal run writes nothing', () => {
    run
      .given(given(history.running()))
      .when({ kind: 'RequestInterrupt', ...cmd })
      .then([
        event('run.interrupt_requested', { byRunId: B, mode: 'interrupt', reason: null }, { runId: RUN, ...USER }),
      ]);
    const asked = [
      ...history.running(),
      event('run.interrupt_requested', { byRunId: B, mode: 'interrupt', reason: null }, { runId: RUN, ...USER }),
    ];
    run
      .given(given(asked))
      .when({ kind: 'RequestInterrupt', ...cmd })
      .then([]);
    for (const h of [history.completed, history.failed, history.cancelled])
      run
        .given(given(h()))
        .when({ kind: 'RequestInterrupt', ...cmd })
        .then([]);
  });

  it('the asked run remembers the request: its state says it stops for B', () => {
    const s = stateOf([
      ...history.running(),
      event('run.interrupt_requested', { byRunId: B, mode: 'interrupt', reason: null }, { runId: RUN, ...USER }),
    ]);
    expect(s).toMatchObject({ status: 'running', cancelRequested: true, interrupt: { mode: 'interrupt', byRunId: B } });
  });

  it('a QUEUED or waiting run ends interrupted at once; its open calls get a synthetic result first', () => {
    const state: InterruptState = {
      run: stateOf(history.waitingForUser()),
      pendingApprovals: [],
      openInvocations: [{ invocationId: INV, status: 'running' }],
    };
    const d = decideInterrupt(cmd, state);
    expect(d.kind === 'events' && d.events.map((e) => e.type)).toEqual(['tool.call.failed', 'run.interrupted']);
    expect(d.kind === 'events' && d.events[0].data).toMatchObject({
      invocationId: INV,
      errorCode: 'run_interrupted',
      message: expect.stringMatching(/^INTERRUPTED: .*instead of answering this question/),
      retryable: false,
    });
    const queued = decideInterrupt(cmd, { run: stateOf(history.queued()), pendingApprovals: [], openInvocations: [] });
    expect(queued.kind === 'events' && queued.events).toEqual([
      event('run.interrupted', { byRunId: B, mode: 'interrupt', reason: null }, { runId: RUN, ...USER }),
    ]);
  });

  it("the worker's ending says whether an open call had started (it may have taken effect) or not", () => {
    const d = decideInterruptedEnd(
      { ...cmd, actor: WORKER },
      {
        run: stateOf(history.running()),
        pendingApprovals: [],
        openInvocations: [
          { invocationId: INV, status: 'proposed' },
          { invocationId: '66666666-aaaa-4aaa-8aaa-666666666666', status: 'running' },
        ],
      },
    );
    const events = d.kind === 'events' ? d.events : [];
    expect(events.map((e) => [e.type, (e.data as { message?: string }).message?.slice(0, 62) ?? null])).toEqual([
      ['tool.call.failed', 'INTERRUPTED: the user sent a new message before this action st'],
      ['tool.call.failed', 'INTERRUPTED: the user sent a new message while this action was'],
      ['run.interrupted', null],
    ]);
    expect(events[2]).toEqual(event('run.interrupted', { byRunId: B, mode: 'interrupt', reason: null }, w));
  });

  it('a rollback marks the run rolled back right before its interrupted end, waiting or running', () => {
    const rollback = { ...cmd, mode: 'rollback' as const };
    const waiting = decideInterrupt(rollback, {
      run: stateOf(history.waitingForUser()),
      pendingApprovals: [],
      openInvocations: [{ invocationId: INV, status: 'running' }],
    });
    expect(waiting.kind === 'events' && waiting.events.map((e) => e.type)).toEqual([
      'tool.call.failed',
      'run.rolled_back',
      'run.interrupted',
    ]);
    const running = stateOf(history.running());
    const requested = decideInterrupt(rollback, { run: running, pendingApprovals: [], openInvocations: [] });
    expect(requested.kind === 'events' && requested.events).toEqual([
      event('run.interrupt_requested', { byRunId: B, mode: 'rollback', reason: null }, { runId: RUN, ...USER }),
    ]);
    const ended = decideInterruptedEnd(
      { ...rollback, actor: WORKER },
      { run: running, pendingApprovals: [], openInvocations: [] },
    );
    expect(ended.kind === 'events' && ended.events).toEqual([
      event('run.rolled_back', { byRunId: B, reason: null }, w),
      event('run.interrupted', { byRunId: B, mode: 'rollback', reason: null }, w),
    ]);
  });

  it('a finished run cannot be ended interrupted', () => {
    const d = decideInterruptedEnd(cmd, {
      run: stateOf(history.completed()),
      pendingApprovals: [],
      openInvocations: [],
    });
    expect(d.kind).toBe('refused');
  });
});

describe('submitting with interrupt', () => {
  const SESSION = '00000000-0000-4000-8000-000000000001';
  const created = event(
    'session.created',
    { agentId: 'demo', agentVersion: 1, principalId: 'alice', title: 'Chat', metadata: {} },
    USER,
  );
  const submit: SessionCommand = {
    kind: 'SubmitMessage',
    sessionId: SESSION,
    messageId: 'm-b',
    content: [{ type: 'text', text: 'stop, do this instead' }],
    strategy: 'interrupt',
    run: {
      runId: B,
      actor: USER,
      agentId: 'demo',
      agentVersion: 1,
      principalId: 'alice',
      modelPolicy: 'default',
      limits: LIMITS,
      priority: 100,
      idempotencyKey: null,
      requestHash: null,
      scopes: ['tools.use'],
    },
  };

  it('queues the new run right behind the active run (ahead of any enqueued one) and asks the active run to stop', () => {
    const s = given([created, ...history.running()]).reduce(sessionDecider.evolve, sessionDecider.initialState());
    const d = sessionDecider.decide(submit, s);
    const events = d.kind === 'events' ? d.events : [];
    expect(events.map((e) => e.type)).toEqual(['user.message.created', 'run.queued', 'run.interrupt_requested']);
    expect(events[1].data).toMatchObject({ queuedBehind: RUN, multitaskStrategy: 'interrupt' });
    expect(events[2]).toMatchObject({ runId: RUN, data: { byRunId: B, mode: 'interrupt' } });
  });

  it('on an idle session it is a plain submit', () => {
    const s = given([created, ...history.completed()]).reduce(sessionDecider.evolve, sessionDecider.initialState());
    const d = sessionDecider.decide(submit, s);
    expect(d.kind === 'events' && d.events.map((e) => e.type)).toEqual(['user.message.created', 'run.queued']);
    expect(d.kind === 'events' && d.events[1].data).toMatchObject({ queuedBehind: null, multitaskStrategy: null });
  });

  it('a queued active run ends in the same decision, and the new run becomes active', () => {
    const s = given([created, ...history.queued()]).reduce(sessionDecider.evolve, sessionDecider.initialState());
    const d = sessionDecider.decide(submit, s);
    const events = d.kind === 'events' ? d.events : [];
    expect(events.map((e) => e.type)).toEqual(['user.message.created', 'run.queued', 'run.interrupted']);
    const after = given([created, ...history.queued(), ...events]).reduce(
      sessionDecider.evolve,
      sessionDecider.initialState(),
    );
    expect(after).toMatchObject({ activeRun: { runId: B, status: 'queued' }, queuedRunIds: [] });
  });
});
