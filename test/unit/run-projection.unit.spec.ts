import { runProjection } from '../../src/domain/projections/run-projection';
import type { StoredEvent } from '../../src/domain/events/payloads';
import { DEFAULT_LIMITS } from '../../src/domain/run/limits';

const base = {
  id: 1,
  sessionId: 's',
  runId: 'r',
  schemaVersion: 1,
  actorType: 'worker',
  actorId: null,
  tenantId: 'local',
  traceId: null,
} as const;
const ev = (
  sequence: number,
  type: string,
  data: Record<string, unknown>,
  createdAt = `2026-11-30T10:00:0${sequence}.000Z`,
) => ({ ...base, sequence, type, data, createdAt }) as unknown as StoredEvent;

function fold(events: StoredEvent[]) {
  return events.reduce<Record<string, unknown> | undefined>((row, e) => runProjection.evolve(row, e), undefined)!;
}

const queued = ev(1, 'run.queued', {
  agentId: 'general',
  agentVersion: 1,
  principalId: 'p',
  modelPolicy: 'demo',
  userMessageId: null,
  limits: DEFAULT_LIMITS,
  priority: 100,
  idempotencyKey: null,
  requestHash: null,
  scopes: ['tools.use'],
});

describe('the run projection', () => {
  it('moves queued → running on claim and records the lease epoch and attempt', () => {
    const row = fold([queued, ev(2, 'run.claimed', { workerId: 'w', leaseEpoch: 3, attempt: 1 })]);
    expect(row).toMatchObject({ status: 'running', lease_owner: 'w', lease_epoch: 3, attempts: 1 });
  });

  it('keeps the first deadline across a crash and re-claim', () => {
    const row = fold([
      queued,
      ev(2, 'run.claimed', { workerId: 'w', leaseEpoch: 1, attempt: 1 }),
      ev(3, 'run.started', { attempt: 1, deadlineAt: '2026-11-30T10:05:00.000Z', traceId: null }),
      ev(4, 'run.claimed', { workerId: 'w2', leaseEpoch: 2, attempt: 2 }),
      ev(5, 'run.started', { attempt: 2, deadlineAt: '2026-11-30T10:09:00.000Z', traceId: null }),
    ]);
    expect(row.deadline_at).toBe('2026-11-30T10:05:00.000Z');
  });

  it('gives a run resumed after a human wait a fresh deadline on its next start', () => {
    const row = fold([
      queued,
      ev(2, 'run.claimed', { workerId: 'w', leaseEpoch: 1, attempt: 1 }),
      ev(3, 'run.started', { attempt: 1, deadlineAt: '2026-11-30T10:05:00.000Z', traceId: null }),
      ev(4, 'run.resumed', { reason: 'approval resolved' }),
      ev(5, 'run.claimed', { workerId: 'w', leaseEpoch: 2, attempt: 1 }),
      ev(6, 'run.started', { attempt: 1, deadlineAt: '2026-11-30T12:00:00.000Z', traceId: null }),
    ]);
    expect(row.deadline_at).toBe('2026-11-30T12:00:00.000Z');
    expect(row.status).toBe('running');
  });

  it('records a failure reason and clears the lease on a terminal failure', () => {
    const row = fold([
      queued,
      ev(2, 'run.claimed', { workerId: 'w', leaseEpoch: 1, attempt: 1 }),
      ev(3, 'run.failed', { reason: 'max_steps_exceeded', message: 'limit', errorCode: 'budget_exceeded' }),
    ]);
    expect(row).toMatchObject({
      status: 'failed',
      lease_owner: null,
      failure: { reason: 'max_steps_exceeded', message: 'limit', errorCode: 'budget_exceeded' },
    });
  });
});
