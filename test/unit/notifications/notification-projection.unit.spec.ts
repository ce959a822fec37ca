import type { StoredEvent } from '../../../src/domain/events/payloads';
import { notificationIdOf } from '../../../src/domain/notifications/notification-id';
import { notificationProjection } from '../../../src/domain/projections/notification-projection';
import { foldBatch } from '../../../src/domain/projections/append-batch';

const base = {
  id: 1,
  sessionId: '11111111-1111-4111-8111-111111111111',
  runId: '22222222-2222-4222-8222-222222222222',
  schemaVersion: 2,
  actorType: 'worker',
  actorId: null,
  tenantId: 'acme',
  traceId: null,
} as const;
const ev = (sequence: number, type: string, data: Record<string, unknown>) =>
  ({ ...base, sequence, type, data, createdAt: `2026-12-03T10:00:0${sequence}.000Z` }) as unknown as StoredEvent;

const SECRET_TEXT = 'send hello to the newsletter';
const approvalId = '33333333-3333-4333-8333-333333333333';
const requested = (actionKind: string) =>
  ev(3, 'approval.requested', {
    approvalId,
    actionKind,
    principalId: 'alice',
    invocationId: '44444444-4444-4444-8444-444444444444',
    toolName: 'email.send',
    arguments: { to: 'list@example.com', body: SECRET_TEXT },
    actionSummary: `email.send ${SECRET_TEXT}`,
    policyReason: 'external effect',
    risk: 'high',
    expiresAt: '2026-12-03T11:00:00.000Z',
    policyVersion: 'p1',
  });

function rowFor(e: StoredEvent) {
  const key = notificationProjection.keyOf(e);
  return key === null ? undefined : notificationProjection.evolve(undefined, e);
}

describe('the notification projection (the outbox fold)', () => {
  it('turns an approval request into a content-free approval.requested notification for its principal', () => {
    const row = rowFor(requested('tool_call'))!;
    expect(row).toMatchObject({
      id: notificationIdOf(`approval.requested:${approvalId}`),
      dedupe_key: `approval.requested:${approvalId}`,
      tenant_id: 'acme',
      session_id: base.sessionId,
      run_id: base.runId,
      principal_id: 'alice',
      kind: 'approval.requested',
      subject_id: approvalId,
      summary: { title: 'An action is waiting for your approval', toolName: 'email.send', risk: 'high' },
      links: {
        session: `/v1/sessions/${base.sessionId}`,
        run: `/v1/runs/${base.runId}`,
        approval: `/v1/approvals/${approvalId}`,
      },
      created_at: '2026-12-03T10:00:03.000Z',
    });
    expect(JSON.stringify(row)).not.toContain(SECRET_TEXT);
    expect(JSON.stringify(row)).not.toContain('list@example.com');
  });

  it("notifies a scheduled occurrence that failed to its schedule's owner, without its message", () => {
    const failed = {
      occurrenceId: 'o1',
      nominalAt: '2026-12-03T07:00:00.000Z',
      revision: 1,
      reason: 'scope_revoked' as const,
      message: SECRET_TEXT,
      consecutiveFailures: 1,
      nextFireAt: null,
    };
    const row = rowFor(ev(7, 'schedule.occurrence.failed', { ...failed, principalId: 'alice' }))!;
    expect(row).toMatchObject({
      kind: 'schedule.occurrence.failed',
      principal_id: 'alice',
      dedupe_key: 'schedule.occurrence.failed:o1',
      summary: { title: 'A scheduled run could not start', reason: 'scope_revoked' },
      links: { schedule: `/v1/schedules/${base.sessionId}` },
    });
    expect(JSON.stringify(row)).not.toContain(SECRET_TEXT);
    // A v1 event (upcast: no owner recorded) notifies nobody rather than the schedule stream's system principal.
    expect(rowFor(ev(8, 'schedule.occurrence.failed', { ...failed, principalId: null }))).toBeUndefined();
  });

  it('calls a review of an UNCERTAIN tool call tool.uncertain', () => {
    expect(rowFor(requested('uncertain_review'))).toMatchObject({ kind: 'tool.uncertain', principal_id: 'alice' });
  });

  it('notifies an expiry, a question and a failure (recipient: the session owner), without their text', () => {
    const expired = rowFor(
      ev(4, 'approval.resolved', { approvalId, decision: 'expired', resolvedBy: 'system', reason: null }),
    );
    expect(expired).toMatchObject({ kind: 'approval.expired', principal_id: null, subject_id: approvalId });
    const asked = rowFor(ev(5, 'run.waiting_for_user', { questionId: 'q1', question: SECRET_TEXT }))!;
    expect(asked).toMatchObject({ kind: 'run.waiting_for_user', dedupe_key: 'run.waiting_for_user:q1' });
    expect(JSON.stringify(asked)).not.toContain(SECRET_TEXT);
    const failed = rowFor(ev(6, 'run.failed', { reason: 'model_error', message: SECRET_TEXT, errorCode: null }))!;
    expect(failed).toMatchObject({ kind: 'run.failed', summary: { title: 'A run failed', reason: 'model_error' } });
    expect(JSON.stringify(failed)).not.toContain(SECRET_TEXT);
  });

  it("notifies a scheduled run's completion and failure to the session's owner (issue 31), content-free", () => {
    const scheduleId = '55555555-5555-4555-8555-555555555555';
    const messageId = '66666666-6666-4666-8666-666666666666';
    const done = rowFor(ev(7, 'run.completed', { messageId, scheduleId }))!;
    expect(done).toEqual({
      id: notificationIdOf(`schedule.occurrence.completed:${base.runId}`),
      dedupe_key: `schedule.occurrence.completed:${base.runId}`,
      tenant_id: 'acme',
      session_id: base.sessionId,
      run_id: base.runId,
      principal_id: null,
      kind: 'schedule.occurrence.completed',
      subject_id: base.runId,
      summary: { title: 'A scheduled run completed' },
      links: {
        session: `/v1/sessions/${base.sessionId}`,
        run: `/v1/runs/${base.runId}`,
        schedule: `/v1/schedules/${scheduleId}`,
      },
      created_at: '2026-12-03T10:00:07.000Z',
    });
    const failed = rowFor(
      ev(8, 'run.failed', { reason: 'model_permanent_error', message: SECRET_TEXT, errorCode: null, scheduleId }),
    )!;
    expect(failed).toMatchObject({
      kind: 'run.failed',
      dedupe_key: `run.failed:${base.runId}`,
      summary: { title: 'A scheduled run failed', reason: 'model_permanent_error' },
      links: { schedule: `/v1/schedules/${scheduleId}` },
    });
    expect(JSON.stringify(failed)).not.toContain(SECRET_TEXT);
    // Any other run's completion notifies nobody (v1 events upcast to scheduleId null; v2 omits it).
    expect(rowFor(ev(9, 'run.completed', { messageId, scheduleId: null }))).toBeUndefined();
    expect(rowFor(ev(9, 'run.completed', { messageId }))).toBeUndefined();
  });

  it('warns that an approval expires in N minutes, rounded up, for its principal, naming only the tool', () => {
    const expiring = (createdAt: string) =>
      ({
        ...ev(4, 'approval.expiring', {
          approvalId,
          principalId: 'alice',
          toolName: 'email.send',
          expiresAt: '2026-12-03T11:00:00.000Z',
          leadSeconds: 600,
        }),
        createdAt,
      }) as StoredEvent;
    expect(rowFor(expiring('2026-12-03T10:50:00.400Z'))).toMatchObject({
      kind: 'approval.expiring',
      dedupe_key: `approval.expiring:${approvalId}`,
      principal_id: 'alice',
      summary: { title: 'An approval expires in 10 minutes', toolName: 'email.send' },
      links: { approval: `/v1/approvals/${approvalId}` },
    });
    expect(rowFor(expiring('2026-12-03T10:59:30.000Z'))!.summary).toMatchObject({
      title: 'An approval expires in 1 minute',
    });
  });

  it('ignores approvals that were answered and events that trigger nothing', () => {
    expect(
      notificationProjection.keyOf(
        ev(4, 'approval.resolved', { approvalId, decision: 'approved', resolvedBy: 'alice', reason: null }),
      ),
    ).toBeNull();
    expect(notificationProjection.keyOf(ev(2, 'run.claimed', { workerId: 'w', leaseEpoch: 1, attempt: 1 }))).toBeNull();
  });

  it('keeps an existing notification when its trigger is folded again (the dedupe key names the row)', () => {
    const first = rowFor(requested('tool_call'))!;
    const again = { ...requested('tool_call'), createdAt: '2026-12-03T12:00:00.000Z' } as StoredEvent;
    expect(notificationProjection.evolve(first, again)).toBe(first);
  });

  it('is folded by the one append fold, in the same batch as its cause', () => {
    const changed = foldBatch([requested('tool_call')], new Map());
    const rows = changed.get(notificationProjection)!;
    expect([...rows.keys()]).toEqual([notificationIdOf(`approval.requested:${approvalId}`)]);
  });
});

describe('notification ids', () => {
  it('are deterministic version-8 UUIDs that differ by key', () => {
    const a = notificationIdOf('approval.requested:x');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(notificationIdOf('approval.requested:x')).toBe(a);
    expect(notificationIdOf('approval.expired:x')).not.toBe(a);
  });
});
