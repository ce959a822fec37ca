import { event } from '../../../src/domain/deciders/decider';
import type { NewEvent } from '../../../src/domain/events/payloads';
import type { RunLimits } from '../../../src/domain/run/limits';
import { stored } from '../../support/decider-spec';

export const RUN = '11111111-1111-4111-8111-111111111111';
export const USER = { actorType: 'user' as const, actorId: 'alice' };
export const WORKER = { actorType: 'worker' as const };
export const LIMITS: RunLimits = {
  maxSteps: 10,
  maxModelCalls: 10,
  maxToolCalls: 10,
  maxInputTokens: null,
  maxOutputTokens: null,
  maxCost: null,
  deadlineSeconds: null,
};

const w = { runId: RUN, actorType: 'worker' as const };

/** A run's history up to a status, as the log has it. */
export const history = {
  queued: (): NewEvent[] => [
    event(
      'run.queued',
      {
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
        queuedBehind: null,
        multitaskStrategy: null,
      },
      { runId: RUN, ...USER },
    ),
  ],
  running: (): NewEvent[] => [
    ...history.queued(),
    event('run.claimed', { workerId: 'w1', leaseEpoch: 1, attempt: 1 }, { ...w, actorId: 'w1' }),
    event('run.started', { attempt: 1, deadlineAt: null, traceId: null, spanId: null }, { ...w, actorId: 'w1' }),
  ],
  waitingForApproval: (): NewEvent[] => [
    ...history.running(),
    event('run.waiting_for_approval', { approvalId: '22222222-2222-4222-8222-222222222222' }, w),
  ],
  waitingForUser: (): NewEvent[] => [
    ...history.running(),
    event('run.waiting_for_user', { questionId: '33333333-3333-4333-8333-333333333333', question: 'which?' }, w),
  ],
  completed: (): NewEvent[] => [
    ...history.running(),
    event('assistant.message.completed', { messageId: '44444444-4444-4444-8444-444444444444', text: 'hi' }, w),
    event('run.completed', { messageId: '44444444-4444-4444-8444-444444444444' }, w),
  ],
  failed: (): NewEvent[] => [
    ...history.running(),
    event('run.failed', { reason: 'internal_error', message: 'boom', errorCode: 'internal_error' }, w),
  ],
  cancelled: (): NewEvent[] => [...history.queued(), event('run.cancelled', { reason: null }, { runId: RUN, ...USER })],
};

export const given = (events: NewEvent[]) => events.map((e) => stored(e));
