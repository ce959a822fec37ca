import { event } from '../../../src/domain/deciders/decider';
import { sessionDecider, type SessionCommand, type SessionState } from '../../../src/domain/deciders/session';
import type { NewEvent } from '../../../src/domain/events/payloads';
import {
  queueAfterEnded,
  queueAfterQueued,
  queuePosition,
  queueTail,
  IDLE_QUEUE,
} from '../../../src/domain/run/session-queue';
import { readyRunOf } from '../../../src/domain/projections/append-batch';
import { deciderSpec } from '../../support/decider-spec';
import { given, history, LIMITS, RUN, USER } from './fixtures';

const spec = deciderSpec(sessionDecider);
const SESSION = '00000000-0000-4000-8000-000000000001';
const B = '22222222-aaaa-4aaa-8aaa-222222222222';
const C = '33333333-aaaa-4aaa-8aaa-333333333333';
const created = event(
  'session.created',
  { agentId: 'demo', agentVersion: 1, principalId: 'alice', title: 'Chat', metadata: {} },
  USER,
);

function submit(runId: string, strategy?: 'reject' | 'enqueue'): SessionCommand {
  return {
    kind: 'SubmitMessage',
    sessionId: SESSION,
    messageId: `m-${runId}`,
    content: [{ type: 'text', text: 'next' }],
    ...(strategy ? { strategy } : {}),
    run: {
      runId,
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
}

function queued(runId: string, behind: string | null): NewEvent[] {
  return [
    event(
      'user.message.created',
      { messageId: `m-${runId}`, content: [{ type: 'text', text: 'next' }] },
      {
        runId,
        ...USER,
      },
    ),
    event(
      'run.queued',
      {
        agentId: 'demo',
        agentVersion: 1,
        principalId: 'alice',
        modelPolicy: 'default',
        userMessageId: `m-${runId}`,
        limits: LIMITS,
        priority: 100,
        idempotencyKey: null,
        requestHash: null,
        scopes: ['tools.use'],
        queuedBehind: behind,
        multitaskStrategy: behind === null ? null : 'enqueue',
      },
      { runId, ...USER },
    ),
  ];
}

const stateOf = (events: NewEvent[]): SessionState =>
  given(events).reduce(sessionDecider.evolve, sessionDecider.initialState());

describe('session queue (issue 33: a second message while a run works)', () => {
  it('reject (the default) refuses a message while a run works, naming the active run and its status', () => {
    for (const strategy of [undefined, 'reject' as const]) {
      const d = spec.given(given([created, ...history.running()])).when(submit(B, strategy));
      d.thenRefuses('conflict', /already has an active run/);
      expect(d.decision.kind === 'refused' && d.decision.refusal.details).toEqual({
        sessionId: SESSION,
        activeRunId: RUN,
        activeRunStatus: 'running',
      });
    }
  });

  it('enqueue records the message and queues its run behind the working one', () => {
    spec
      .given(given([created, ...history.running()]))
      .when(submit(B, 'enqueue'))
      .then(queued(B, RUN));
  });

  it('enqueue on an idle session is a plain submit (nothing ahead of it)', () => {
    spec
      .given(given([created, ...history.completed()]))
      .when(submit(B, 'enqueue'))
      .then(queued(B, null));
  });

  it('a third message waits behind the second (FIFO); when the first ends the second becomes active', () => {
    const withB = [created, ...history.running(), ...queued(B, RUN)];
    spec.given(given(withB)).when(submit(C, 'enqueue')).then(queued(C, B));
    const all = [...withB, ...queued(C, B)];
    expect(stateOf(all)).toMatchObject({ activeRun: { runId: RUN, status: 'running' }, queuedRunIds: [B, C] });
    const afterA = [...all, event('run.completed', { messageId: null }, { runId: RUN, actorType: 'worker' })];
    expect(stateOf(afterA)).toMatchObject({ activeRun: { runId: B, status: 'queued' }, queuedRunIds: [C] });
    // A plain message is still refused: B is the session's active run now.
    spec.given(given(afterA)).when(submit('44444444-aaaa-4aaa-8aaa-444444444444')).thenRefuses('conflict');
  });

  it('a waiting run that is cancelled leaves the queue without touching the active run', () => {
    const all = [
      created,
      ...history.running(),
      ...queued(B, RUN),
      ...queued(C, B),
      event('run.cancelled', { reason: null }, { runId: B, ...USER }),
    ];
    expect(stateOf(all)).toMatchObject({ activeRun: { runId: RUN, status: 'running' }, queuedRunIds: [C] });
  });

  it('deleting a session is refused while runs are active or queued', () => {
    spec
      .given(given([created, ...history.running(), ...queued(B, RUN)]))
      .when({ kind: 'DeleteSession', sessionId: SESSION, actor: USER, reason: null })
      .thenRefuses('invalid_state_transition');
  });
});

describe('the session queue fold', () => {
  it('places a run right behind the run it names, or last when that run left the queue', () => {
    let q = queueAfterQueued(IDLE_QUEUE, 'a', null);
    expect(q).toEqual({ active: 'a', queued: [] });
    q = queueAfterQueued(q, 'b', 'a');
    q = queueAfterQueued(q, 'c', 'b');
    expect(q).toEqual({ active: 'a', queued: ['b', 'c'] });
    expect(queueAfterQueued(q, 'x', 'a')).toEqual({ active: 'a', queued: ['x', 'b', 'c'] });
    expect(queueAfterQueued(q, 'y', 'gone')).toEqual({ active: 'a', queued: ['b', 'c', 'y'] });
    expect(queueTail(q)).toBe('c');
    expect([queuePosition(q, 'a'), queuePosition(q, 'b'), queuePosition(q, 'c'), queuePosition(q, 'z')]).toEqual([
      0,
      1,
      2,
      null,
    ]);
  });

  it('promotes the next run when the active one ends; an unknown run changes nothing', () => {
    const q = { active: 'a', queued: ['b', 'c'] };
    expect(queueAfterEnded(q, 'a')).toEqual({ active: 'b', queued: ['c'] });
    expect(queueAfterEnded(q, 'c')).toEqual({ active: 'a', queued: ['b'] });
    expect(queueAfterEnded(q, 'z')).toBe(q);
    expect(queueAfterEnded({ active: 'a', queued: [] }, 'a')).toEqual(IDLE_QUEUE);
  });
});

describe('the run_ready nudge of a batch (readyRunOf)', () => {
  const session = (active: string | null, queued: string[] = []) => ({ active_run_id: active, queued_run_ids: queued });

  it('names the run that became active: queued into an idle session, or next once the run ahead ended', () => {
    expect(readyRunOf({ readyRunId: 'a' }, session(null), session('a'))).toBe('a');
    expect(readyRunOf({ readyRunId: null }, session('a', ['b']), session('b'))).toBe('b');
  });

  it('names a running run asked to stop for a newer message, so its worker hears of it at once', () => {
    expect(readyRunOf({ readyRunId: 'b', interruptedRunId: 'a' }, session('a'), session('a', ['b']))).toBe('a');
  });

  it('does not name a run that waits in the queue', () => {
    expect(readyRunOf({ readyRunId: 'b' }, session('a'), session('a', ['b']))).toBeNull();
    expect(readyRunOf({ readyRunId: 'r' }, session('r'), undefined)).toBe('r');
  });
});
