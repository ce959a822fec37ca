import { sessionProjection } from '../../src/domain/projections/session-projection';
import type { StoredEvent } from '../../src/domain/events/payloads';

const base = {
  id: 1,
  sessionId: 's',
  schemaVersion: 1,
  actorType: 'system',
  actorId: null,
  tenantId: 'local',
  traceId: null,
} as const;
const ev = (sequence: number, type: string, data: Record<string, unknown>, runId: string | null = 'r') =>
  ({
    ...base,
    runId,
    sequence,
    type,
    data,
    createdAt: `2026-11-30T10:00:${String(sequence).padStart(2, '0')}.000Z`,
  }) as unknown as StoredEvent;

function foldAll(events: StoredEvent[]): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  let row: Record<string, unknown> | undefined;
  for (const e of events) {
    row = sessionProjection.evolve(row, e);
    rows.push(row!);
  }
  return rows;
}

describe('the session projection (v3)', () => {
  const events = [
    ev(
      1,
      'session.created',
      { agentId: 'general', agentVersion: 1, principalId: 'p', title: null, metadata: {} },
      null,
    ),
    ev(2, 'user.message.created', { messageId: 'm', content: [{ type: 'text', text: 'hi' }] }, null),
    ev(3, 'run.queued', { agentId: 'general' }),
    ev(4, 'run.claimed', { workerId: 'w', leaseEpoch: 1, attempt: 1 }),
    ev(5, 'model.request.started', { modelCallId: 'c' }),
    ev(6, 'tool.call.started', { invocationId: 'i' }),
    ev(7, 'assistant.message.completed', { messageId: 'a', text: '391' }),
    ev(8, 'run.completed', { messageId: 'a' }),
    ev(9, 'run.checkpointed', { checkpointVersion: 1, step: 1 }),
  ];
  const rows = foldAll(events);

  it("returns the row itself for an event that changes none of the session's state (the append then does not write it)", () => {
    // Which folds left the row as it was: the claim, the model and tool calls, the event after the end.
    expect(rows.map((r, i) => i > 0 && r === rows[i - 1])).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
      false,
      false,
      true,
    ]);
    expect(rows.every((r) => !('next_event_sequence' in r))).toBe(true);
  });

  it("moves updated_at only when the session's own state changes, so most appends leave the indexed column alone", () => {
    const at = (seq: number) => `2026-11-30T10:00:0${seq}.000Z`;
    expect(rows.map((r) => r.updated_at)).toEqual([
      at(1), // created
      at(2), // message_count 0 → 1
      at(3), // active_run_id, last_run_id
      at(3), // run.claimed: nothing of the session changed
      at(3), // model call
      at(3), // tool call
      at(7), // message_count 1 → 2
      at(8), // active_run_id cleared
      at(8), // an event after the run's end
    ]);
    expect(rows[7]).toMatchObject({ active_run_id: null, last_run_id: 'r', message_count: 2 });
  });

  it('moves updated_at when the session is deleted', () => {
    const deleted = sessionProjection.evolve(rows[8], ev(10, 'session.deleted', {}, null))!;
    expect(deleted).toMatchObject({ status: 'deleted', updated_at: '2026-11-30T10:00:10.000Z' });
  });
});

describe('the session projection (v4): runs queued behind the active one', () => {
  const events = [
    ev(1, 'session.created', { agentId: 'general', agentVersion: 1, principalId: 'p', title: 't', metadata: {} }, null),
    ev(2, 'run.queued', { agentId: 'general', queuedBehind: null }, 'a'),
    ev(3, 'run.claimed', { workerId: 'w', leaseEpoch: 1, attempt: 1 }, 'a'),
    ev(4, 'run.queued', { agentId: 'general', queuedBehind: 'a', multitaskStrategy: 'enqueue' }, 'b'),
    ev(5, 'run.queued', { agentId: 'general', queuedBehind: 'b', multitaskStrategy: 'enqueue' }, 'c'),
    ev(6, 'run.completed', { messageId: null }, 'a'),
    ev(7, 'run.cancelled', { reason: null }, 'c'),
    ev(8, 'run.failed', { reason: 'internal_error', message: 'x', errorCode: null }, 'b'),
  ];
  const rows = foldAll(events);

  it('keeps the waiting runs in order, promotes the next when the active run ends, and drops a cancelled one', () => {
    expect(rows.map((r) => [r.active_run_id, r.queued_run_ids, r.last_run_id])).toEqual([
      [null, [], null],
      ['a', [], 'a'],
      ['a', [], 'a'],
      ['a', ['b'], 'b'],
      ['a', ['b', 'c'], 'c'],
      ['b', ['c'], 'c'],
      ['b', [], 'c'],
      [null, [], 'c'],
    ]);
  });

  it('a v1 run.queued (no queuedBehind) makes the run active as before', () => {
    const [, row] = foldAll([events[0], ev(2, 'run.queued', { agentId: 'general' }, 'a')]);
    expect(row).toMatchObject({ active_run_id: 'a', queued_run_ids: [] });
  });
});
