import type { StoredEvent } from '../events/payloads';
import type { Projection, Row } from './projection';

/**
 * idempotency_keys: insert-only. A run.queued carrying a client key records it; a second submit with
 * the same key collides on the primary key inside the same append and writes nothing.
 */
export const idempotencyProjection: Projection = {
  name: 'idempotency_keys',
  table: 'idempotency_keys',
  version: 1,
  keyColumn: null,
  columns: ['tenant_id', 'principal_id', 'scope', 'key', 'request_hash', 'session_id', 'run_id', 'created_at'],
  keyOf: (e) =>
    e.type === 'run.queued' && e.data.idempotencyKey !== null
      ? `${e.tenantId}/${e.data.principalId}/${e.data.idempotencyKey}`
      : null,
  evolve(_row: Row | undefined, e: StoredEvent): Row | undefined {
    if (e.type !== 'run.queued' || e.data.idempotencyKey === null) return undefined;
    return {
      tenant_id: e.tenantId,
      principal_id: e.data.principalId,
      scope: 'submit_message',
      key: e.data.idempotencyKey,
      request_hash: e.data.requestHash ?? '',
      session_id: e.sessionId,
      run_id: e.runId,
      created_at: e.createdAt,
    };
  },
};
