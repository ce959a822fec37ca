import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/domain/events/payloads';
import { DEFAULT_LIMITS } from '../../src/domain/run/limits';
import type { Clock } from '../../src/ports/clock';

export const TENANT = 'local';

export function sessionCreated(principalId = 'local-user'): NewEvent<'session.created'> {
  return {
    type: 'session.created',
    data: { agentId: 'general', agentVersion: 1, principalId, title: null, metadata: {} },
  };
}

export function userMessage(text: string): NewEvent<'user.message.created'> {
  return {
    type: 'user.message.created',
    actorType: 'user',
    data: { messageId: randomUUID(), content: [{ type: 'text', text }] },
  };
}

export function runQueued(runId: string, idempotencyKey: string | null = null): NewEvent<'run.queued'> {
  return {
    type: 'run.queued',
    runId,
    data: {
      agentId: 'general',
      agentVersion: 1,
      principalId: 'local-user',
      modelPolicy: 'demo',
      userMessageId: null,
      limits: DEFAULT_LIMITS,
      priority: 100,
      idempotencyKey,
      requestHash: idempotencyKey ? 'h' : null,
      scopes: ['tools.use'],
    },
  };
}

/** A clock that tells real time (tests assert on order, not on instants). */
export const testClock: Clock = {
  nowMs: () => Date.now(),
  nowIso: () => new Date().toISOString(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};
