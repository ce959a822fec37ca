import { event } from '../../../src/domain/deciders/decider';
import { runDecider, runStateOf, type RunCommand } from '../../../src/domain/deciders/run';
import { FAILURE_REASONS } from '../../../src/domain/run/failure';
import { deciderSpec } from '../../support/decider-spec';
import { given, history, LIMITS, RUN, USER, WORKER } from './fixtures';

const spec = deciderSpec(runDecider);
const w = { runId: RUN, actorType: 'worker' as const };
const claim = (attempt = 1, over: Partial<Extract<RunCommand, { kind: 'ClaimRun' }>> = {}): RunCommand => ({
  kind: 'ClaimRun',
  runId: RUN,
  workerId: 'w2',
  leaseEpoch: attempt,
  attempt,
  maxAttempts: 5,
  deadlineAt: null,
  trace: null,
  consent: null,
  principalId: 'alice',
  ...over,
});
const fail = (reason: (typeof FAILURE_REASONS)[number]): RunCommand => ({
  kind: 'FailRun',
  runId: RUN,
  actor: WORKER,
  reason,
  message: `failed: ${reason}`,
  errorCode: reason,
});

describe('run decider (plan §27.2)', () => {
  it('queues a new run once', () => {
    const cmd: RunCommand = {
      kind: 'QueueRun',
      runId: RUN,
      actor: USER,
      agentId: 'demo',
      agentVersion: 1,
      principalId: 'alice',
      modelPolicy: 'default',
      userMessageId: null,
      limits: LIMITS,
      priority: 100,
      idempotencyKey: null,
      requestHash: null,
      scopes: ['tools.use'],
    };
    spec.given([]).when(cmd).then(history.queued());
    spec.given(given(history.queued())).when(cmd).thenRefuses('conflict');
  });

  describe('a scheduled run (issue 31)', () => {
    const SCHEDULE = '55555555-5555-4555-8555-555555555555';
    const scheduled = () => {
      const [queued, ...rest] = history.running();
      return [{ ...queued, data: { ...queued.data, scheduleId: SCHEDULE } }, ...rest] as typeof rest;
    };
    it('records its schedule on run.queued v4', () => {
      const cmd: RunCommand = {
        kind: 'QueueRun',
        runId: RUN,
        actor: USER,
        agentId: 'demo',
        agentVersion: 1,
        principalId: 'alice',
        modelPolicy: 'default',
        userMessageId: null,
        limits: LIMITS,
        priority: 100,
        idempotencyKey: null,
        requestHash: null,
        scopes: ['tools.use'],
        scheduleId: SCHEDULE,
      };
      spec
        .given([])
        .when(cmd)
        .then([{ ...history.queued()[0], data: { ...history.queued()[0].data, scheduleId: SCHEDULE } }]);
    });
    it('names it on run.completed and run.failed, from the folded events or from its row', () => {
      spec
        .given(given(scheduled()))
        .when({ kind: 'CompleteRun', runId: RUN, actor: WORKER, messageId: 'm1', text: 'done' })
        .then([
          event('assistant.message.completed', { messageId: 'm1', text: 'done' }, w),
          event('run.completed', { messageId: 'm1', scheduleId: SCHEDULE }, w),
        ]);
      spec
        .given(given(scheduled()))
        .when(fail('model_permanent_error'))
        .then([
          event(
            'run.failed',
            {
              reason: 'model_permanent_error',
              message: 'failed: model_permanent_error',
              errorCode: 'model_permanent_error',
              scheduleId: SCHEDULE,
            },
            w,
          ),
        ]);
      const row = {
        id: RUN,
        status: 'running' as const,
        cancelRequestedAt: null,
        startedAt: 'x',
        scheduleId: SCHEDULE,
      };
      const decided = runDecider.decide(fail('deadline_exceeded'), runStateOf(row));
      expect(decided.kind === 'events' && decided.events.map((e) => e.data)).toEqual([
        {
          reason: 'deadline_exceeded',
          message: 'failed: deadline_exceeded',
          errorCode: 'deadline_exceeded',
          scheduleId: SCHEDULE,
        },
      ]);
    });
  });

  describe('QUEUED', () => {
    it('-> RUNNING: a claim starts it and stamps consent at the first start only', () => {
      const header = { ...w, actorId: 'w2', traceId: 't1' };
      spec
        .given(given(history.queued()))
        .when(claim(1, { consent: { status: 'granted', version: 3 }, trace: { traceId: 't1', spanId: 's1' } }))
        .then([
          event('run.claimed', { workerId: 'w2', leaseEpoch: 1, attempt: 1 }, header),
          event('run.started', { attempt: 1, deadlineAt: null, traceId: 't1', spanId: 's1' }, header),
          event(
            'run.consent_stamped',
            { principalId: 'alice', trajectoryExport: 'granted', consentVersion: 3 },
            { runId: RUN, actorType: 'system' },
          ),
        ]);
      // Released and claimed again: started before, so no second stamp.
      const released = [
        ...history.running(),
        event('run.released', { workerId: 'w1', reason: 'worker shutting down' }, w),
      ];
      const d = spec.given(given(released)).when(claim(2)).decision;
      expect(d.kind === 'events' && d.events.map((e) => e.type)).toEqual(['run.claimed', 'run.started']);
    });

    it('-> RUNNING: an absent consent row is stamped `absent`', () => {
      const d = spec.given(given(history.queued())).when(claim()).decision;
      expect(d.kind === 'events' && d.events[2]?.data).toEqual({
        principalId: 'alice',
        trajectoryExport: 'absent',
        consentVersion: null,
      });
    });

    it('-> FAILED: only for an exhausted crash allowance (ADR-0118)', () => {
      spec
        .given(given(history.queued()))
        .when(claim(6))
        .then([
          event(
            'run.failed',
            {
              reason: 'crash_allowance_exhausted',
              message: 'run was claimed 5 times without finishing',
              errorCode: null,
            },
            { runId: RUN, actorType: 'system', actorId: 'w2' },
          ),
        ]);
    });

    it('-> CANCELLED: a cancel request cancels it directly', () => {
      spec
        .given(given(history.queued()))
        .when({ kind: 'RequestCancel', runId: RUN, actor: USER, reason: 'nope' })
        .then([event('run.cancelled', { reason: 'nope' }, { runId: RUN, ...USER })]);
    });

    it('refuses what only a running run may do', () => {
      const s = spec.given(given(history.queued()));
      s.when({ kind: 'CompleteRun', runId: RUN, actor: WORKER, messageId: 'm', text: 'x' }).thenRefuses(
        'invalid_state_transition',
      );
      s.when({ kind: 'SuspendForApproval', runId: RUN, actor: WORKER, approvalId: 'a' }).thenRefuses(
        'invalid_state_transition',
      );
      s.when({ kind: 'CheckpointRun', runId: RUN, actor: WORKER, checkpointVersion: 1, step: 1 }).thenRefuses(
        'invalid_state_transition',
      );
      s.when({ kind: 'ResumeRun', runId: RUN, actor: USER, awaiting: 'user', reason: 'user_input' }).thenRefuses(
        'conflict',
        /is queued, not waiting for user input/,
      );
    });
  });

  describe('RUNNING', () => {
    const s = () => spec.given(given(history.running()));
    it('-> WAITING_FOR_APPROVAL', () =>
      s()
        .when({ kind: 'SuspendForApproval', runId: RUN, actor: WORKER, approvalId: 'a1' })
        .then([event('run.waiting_for_approval', { approvalId: 'a1' }, w)]));
    it('-> WAITING_FOR_USER', () =>
      s()
        .when({ kind: 'SuspendForUser', runId: RUN, actor: WORKER, questionId: 'q1', question: 'which?' })
        .then([event('run.waiting_for_user', { questionId: 'q1', question: 'which?' }, w)]));
    it('-> COMPLETED: the answer and the end in one decision', () =>
      s()
        .when({ kind: 'CompleteRun', runId: RUN, actor: WORKER, messageId: 'm1', text: 'done' })
        .then([
          event('assistant.message.completed', { messageId: 'm1', text: 'done' }, w),
          event('run.completed', { messageId: 'm1' }, w),
        ]));
    it.each(FAILURE_REASONS.map((r) => [r]))('-> FAILED (%s)', (reason) =>
      s()
        .when(fail(reason))
        .then([event('run.failed', { reason, message: `failed: ${reason}`, errorCode: reason }, w)]),
    );
    it('-> CANCELLED: its worker finalizes a requested cancel', () =>
      s()
        .when({ kind: 'CancelRun', runId: RUN, actor: WORKER, reason: 'cancel requested' })
        .then([event('run.cancelled', { reason: 'cancel requested' }, w)]));
    it('-> QUEUED: the lease is released on shutdown', () =>
      s()
        .when({ kind: 'ReleaseRun', runId: RUN, actor: WORKER, workerId: 'w1', reason: 'worker shutting down' })
        .then([event('run.released', { workerId: 'w1', reason: 'worker shutting down' }, w)]));
    it('checkpoints', () =>
      s()
        .when({ kind: 'CheckpointRun', runId: RUN, actor: WORKER, checkpointVersion: 2, step: 1 })
        .then([event('run.checkpointed', { checkpointVersion: 2, step: 1 }, w)]));
    it('a cancel request asks the worker to stop, once', () => {
      const cmd: RunCommand = { kind: 'RequestCancel', runId: RUN, actor: USER, reason: null };
      s()
        .when(cmd)
        .then([event('run.cancel_requested', { reason: null }, { runId: RUN, ...USER })]);
      const requested = [
        ...history.running(),
        event('run.cancel_requested', { reason: null }, { runId: RUN, ...USER }),
      ];
      spec.given(given(requested)).when(cmd).then([]);
    });
    it('a recovery claim (expired lease) keeps it running', () => {
      const d = s().when(claim(2)).decision;
      expect(d.kind === 'events' && d.events.map((e) => e.type)).toEqual(['run.claimed', 'run.started']);
    });
  });

  describe.each([
    ['WAITING_FOR_APPROVAL', history.waitingForApproval, 'approval' as const],
    ['WAITING_FOR_USER', history.waitingForUser, 'user' as const],
  ])('%s', (_name, h, awaiting) => {
    const other = awaiting === 'approval' ? 'user' : 'approval';
    it('-> RUNNING: resumed (re-queued), then claimed by a worker', () => {
      const resumed = event('run.resumed', { reason: 'r' }, { runId: RUN, ...USER });
      spec
        .given(given(h()))
        .when({ kind: 'ResumeRun', runId: RUN, actor: USER, awaiting, reason: 'r' })
        .then([resumed]);
      const d = spec.given(given([...h(), resumed])).when(claim(2)).decision;
      expect(d.kind === 'events' && d.events.map((e) => e.type)).toEqual(['run.claimed', 'run.started']);
    });
    it('refuses a resume for the other kind of wait', () =>
      spec
        .given(given(h()))
        .when({ kind: 'ResumeRun', runId: RUN, actor: USER, awaiting: other, reason: 'r' })
        .thenRefuses('conflict', /not waiting for/));
    it('-> CANCELLED', () =>
      spec
        .given(given(h()))
        .when({ kind: 'RequestCancel', runId: RUN, actor: USER, reason: null })
        .then([event('run.cancelled', { reason: null }, { runId: RUN, ...USER })]));
    it('-> FAILED (expired, per policy)', () =>
      spec
        .given(given(h()))
        .when(fail('approval_expired'))
        .then([
          event(
            'run.failed',
            { reason: 'approval_expired', message: 'failed: approval_expired', errorCode: 'approval_expired' },
            w,
          ),
        ]));
    it('refuses to complete', () =>
      spec
        .given(given(h()))
        .when({ kind: 'CompleteRun', runId: RUN, actor: WORKER, messageId: 'm', text: 'x' })
        .thenRefuses('invalid_state_transition'));
  });

  describe.each([
    ['COMPLETED', history.completed],
    ['FAILED', history.failed],
    ['CANCELLED', history.cancelled],
  ])('%s (terminal)', (_name, h) => {
    it('refuses every status change', () => {
      const s = spec.given(given(h()));
      for (const cmd of [
        claim(2),
        fail('internal_error'),
        { kind: 'CancelRun', runId: RUN, actor: WORKER, reason: null } as RunCommand,
        { kind: 'CompleteRun', runId: RUN, actor: WORKER, messageId: 'm', text: 'x' } as RunCommand,
        { kind: 'ReleaseRun', runId: RUN, actor: WORKER, workerId: 'w', reason: 'r' } as RunCommand,
        { kind: 'SuspendForUser', runId: RUN, actor: WORKER, questionId: 'q', question: 'q' } as RunCommand,
      ])
        s.when(cmd).thenRefuses('invalid_state_transition');
    });
    it('a cancel request writes nothing', () =>
      spec.given(given(h())).when({ kind: 'RequestCancel', runId: RUN, actor: USER, reason: null }).then([]));
  });

  it('refuses commands for a run that does not exist', () => {
    spec.given([]).when(fail('internal_error')).thenRefuses('invalid_state_transition');
    spec
      .given([])
      .when({ kind: 'RequestCancel', runId: RUN, actor: USER, reason: null })
      .thenRefuses('invalid_state_transition');
  });

  it('the state of a read-model row is the fold of its events', () => {
    const folded = spec.given(given(history.waitingForApproval())).state;
    expect(
      runStateOf({
        id: RUN,
        status: 'waiting_for_approval',
        cancelRequestedAt: null,
        startedAt: '2026-01-01T00:00:00Z',
      }),
    ).toEqual(folded);
  });
});
