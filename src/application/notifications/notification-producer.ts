import { createHash } from 'node:crypto';
import { combine } from '../../domain/deciders/decider';
import {
  NOTIFICATION_STREAM_PRINCIPAL,
  notificationDecider,
  type PostedNotification,
} from '../../domain/deciders/notification';
import { sessionDecider } from '../../domain/deciders/session';
import { ConcurrencyConflict, ValidationError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { EventStore } from '../../ports/event-store';
import type { NotificationInbox, NotificationRecord } from '../../ports/notifications';
import { handleCommand } from '../command-handler';

/**
 * The stream of one (tenant, idempotency key): a SHA-256 of both, as a UUID. Cryptographic, so no
 * producer can pick a key that lands on another tenant's stream.
 */
export function postedStreamIdOf(tenantId: string, key: string): string {
  const h = createHash('sha256').update(`notification\u0000${tenantId}\u0000${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * External producers' notifications (`POST /v1/notifications`, issue 31 item 2, ADR 0036): the
 * notification decider decides, the append writes the event and (inline projection) the
 * notification in one statement. The same key and body again: the original, `created: false`.
 */
export class NotificationProducer {
  constructor(
    private readonly store: EventStore,
    private readonly inbox: NotificationInbox,
  ) {}

  async post(
    producer: Principal,
    key: string | null,
    notification: PostedNotification,
  ): Promise<{ notification: NotificationRecord & { principalId: string }; created: boolean }> {
    if (key === null || key.trim() === '')
      throw new ValidationError('the Idempotency-Key header is required', { field: 'idempotency_key' });
    if (key.length > 255)
      throw new ValidationError('Idempotency-Key must be 1 to 255 characters', { field: 'idempotency_key' });
    const streamId = postedStreamIdOf(producer.tenantId, key);
    const created = await handleCommand(this.store, {
      load: async () => {
        const existing = await this.inbox.findPosted(producer.tenantId, streamId);
        return {
          sessionId: streamId,
          tenantId: producer.tenantId,
          state: { posted: existing },
          // A new stream: a concurrent first post of the same key loses the sequence and retries.
          ...(existing === null ? { expectedSequence: 0 } : {}),
        };
      },
      decide: (state) => {
        const actor = { actorType: 'user' as const, actorId: producer.principalId };
        const posted = notificationDecider.decide(
          { kind: 'PostNotification', actor, idempotencyKey: key, notification },
          state,
        );
        if (state.posted !== null || posted.kind === 'refused') return posted;
        // The stream's own session, owned by a system principal: no user's session list shows it.
        const session = sessionDecider.decide(
          {
            kind: 'CreateSession',
            actor,
            agentId: NOTIFICATION_STREAM_PRINCIPAL,
            agentVersion: 1,
            principalId: NOTIFICATION_STREAM_PRINCIPAL,
            title: 'Notification stream',
            metadata: { stream: 'notification', producer: producer.principalId },
          },
          sessionDecider.initialState(),
        );
        return combine(session, posted);
      },
      result: (_loaded, appended) => appended.length > 0,
      exhausted: () => new ConcurrencyConflict('the notification could not be posted; try again', {}),
    });
    const stored = await this.inbox.getPosted(producer.tenantId, streamId);
    if (stored === null) throw new ConcurrencyConflict('the notification could not be read back; try again', {});
    return { notification: stored, created };
  }
}
