import { approvalDecider, approvalStateOf, type ApprovalCommand } from '../../../src/domain/deciders/approval';
import {
  decideApprovalResolution,
  decideReapOnCancel,
  type ApprovalResolutionState,
  type PendingApproval,
} from '../../../src/domain/deciders/approval-resolution';
import { event, foldState } from '../../../src/domain/deciders/decider';
import { runDecider } from '../../../src/domain/deciders/run';
import { approvalOutcomeText } from '../../../src/domain/tools/outcomes';
import { deciderSpec } from '../../support/decider-spec';
import { given, history, RUN, USER, WORKER } from './fixtures';

const spec = deciderSpec(approvalDecider);
const APPROVAL = '22222222-2222-4222-8222-222222222222';
const INV = '55555555-5555-4555-8555-555555555555';
const request: ApprovalCommand = {
  kind: 'RequestApproval',
  runId: RUN,
  approvalId: APPROVAL,
  actor: WORKER,
  actionKind: 'tool_call',
  principalId: 'alice',
  invocationId: INV,
  toolName: 'demo.external_write',
  arguments: { target: 'x' },
  actionSummary: 'send to x',
  policyReason: 'requires_approval',
  risk: 'high',
  expiresAt: '2026-01-01T01:00:00.000Z',
  policyVersion: 'p1',
};
const requested = event(
  'approval.requested',
  {
    approvalId: APPROVAL,
    actionKind: 'tool_call',
    principalId: 'alice',
    invocationId: INV,
    toolName: 'demo.external_write',
    arguments: { target: 'x' },
    actionSummary: 'send to x',
    policyReason: 'requires_approval',
    risk: 'high',
    expiresAt: '2026-01-01T01:00:00.000Z',
    policyVersion: 'p1',
  },
  { runId: RUN, actorType: 'worker' },
);
const resolve = (decision: 'approved' | 'denied'): ApprovalCommand => ({
  kind: 'ResolveApproval',
  runId: RUN,
  approvalId: APPROVAL,
  actor: USER,
  decision,
  resolvedBy: 'alice',
  reason: null,
});
const EXPIRY_MS = Date.parse('2026-01-01T01:00:00.000Z');

describe('approval decider (plan §9.3)', () => {
  it('is requested once', () => {
    spec.given([]).when(request).then([requested]);
    spec
      .given(given([requested]))
      .when(request)
      .thenRefuses('invalid_state_transition');
  });

  it.each(['approved', 'denied'] as const)('a pending approval is %s; the first resolution wins', (d) => {
    const resolved = event(
      'approval.resolved',
      { approvalId: APPROVAL, decision: d, resolvedBy: 'alice', reason: null, edit: null },
      { runId: RUN, ...USER },
    );
    spec
      .given(given([requested]))
      .when(resolve(d))
      .then([resolved]);
    spec
      .given(given([requested, resolved]))
      .when(resolve('approved'))
      .thenRefuses('conflict', new RegExp(`already ${d}`));
  });

  it('expires only once past its expiry', () => {
    const reaper = { actorType: 'system' as const, actorId: 'system:approval-reaper' };
    const expire = (nowMs: number): ApprovalCommand => ({
      kind: 'ExpireApproval',
      runId: RUN,
      approvalId: APPROVAL,
      actor: reaper,
      nowMs,
    });
    spec
      .given(given([requested]))
      .when(expire(EXPIRY_MS - 1))
      .thenRefuses('conflict', /not expired/);
    spec
      .given(given([requested]))
      .when(expire(EXPIRY_MS))
      .then([
        event(
          'approval.resolved',
          {
            approvalId: APPROVAL,
            decision: 'expired',
            resolvedBy: 'system:approval-reaper',
            reason: 'approval expired',
            edit: null,
          },
          { runId: RUN, ...reaper },
        ),
      ]);
  });

  it('warns once that it is about to expire, only within the lead and before the deadline', () => {
    const reaper = { actorType: 'system' as const, actorId: 'system:approval-reaper' };
    const warn = (nowMs: number): ApprovalCommand => ({
      kind: 'WarnApprovalExpiring',
      runId: RUN,
      approvalId: APPROVAL,
      actor: reaper,
      nowMs,
      leadSeconds: 600,
      principalId: 'alice',
      toolName: 'demo.external_write',
    });
    const expiring = event(
      'approval.expiring',
      {
        approvalId: APPROVAL,
        principalId: 'alice',
        toolName: 'demo.external_write',
        expiresAt: '2026-01-01T01:00:00.000Z',
        leadSeconds: 600,
      },
      { runId: RUN, ...reaper },
    );
    spec
      .given(given([requested]))
      .when(warn(EXPIRY_MS - 600_001))
      .thenRefuses('conflict', /not about to expire/);
    spec
      .given(given([requested]))
      .when(warn(EXPIRY_MS - 600_000))
      .then([expiring]);
    spec
      .given(given([requested, expiring]))
      .when(warn(EXPIRY_MS - 1000))
      .thenRefuses('conflict', /not about to expire/);
    spec
      .given(given([requested]))
      .when(warn(EXPIRY_MS))
      .thenRefuses('conflict', /not about to expire/);
    const resolved = event(
      'approval.resolved',
      { approvalId: APPROVAL, decision: 'approved', resolvedBy: 'alice', reason: null, edit: null },
      { runId: RUN, ...USER },
    );
    spec
      .given(given([requested, resolved]))
      .when(warn(EXPIRY_MS - 1000))
      .thenRefuses('conflict', /already approved/);
  });

  it('the state of a read-model row is the fold of its events', () => {
    expect(
      approvalStateOf({ id: APPROVAL, status: 'pending', resolvedBy: null, expiresAt: '2026-01-01T01:00:00.000Z' }),
    ).toEqual(spec.given(given([requested])).state);
    const warned = event(
      'approval.expiring',
      {
        approvalId: APPROVAL,
        principalId: 'alice',
        toolName: 'demo.external_write',
        expiresAt: '2026-01-01T01:00:00.000Z',
        leadSeconds: 600,
      },
      { runId: RUN, actorType: 'system' },
    );
    expect(
      approvalStateOf({
        id: APPROVAL,
        status: 'pending',
        resolvedBy: null,
        expiresAt: '2026-01-01T01:00:00.000Z',
        expiryWarnedAt: '2026-01-01T00:50:00.000Z',
      }),
    ).toEqual(spec.given(given([requested, warned])).state);
  });
});

describe('approval resolution across approval, invocation and run', () => {
  const pending = (over: Partial<PendingApproval> = {}): PendingApproval => ({
    state: foldState(approvalDecider, given([requested])),
    runId: RUN,
    actionKind: 'tool_call',
    invocationId: INV,
    policyVersion: 'p1',
    ...over,
  });
  const state = (over: Partial<PendingApproval> = {}, h = history.waitingForApproval()): ApprovalResolutionState => ({
    approval: pending(over),
    run: foldState(runDecider, given(h)),
  });
  const types = (d: ReturnType<typeof decideApprovalResolution>) =>
    d.kind === 'events' ? d.events.map((e) => e.type) : d.refusal.code;

  it('approve: resolved, then the run resumes', () =>
    expect(
      types(
        decideApprovalResolution(
          { kind: 'ResolvePendingApproval', decision: 'approve_once', principalId: 'alice', reason: null },
          state(),
        ),
      ),
    ).toEqual(['approval.resolved', 'run.resumed']));

  it('deny: the invocation is refused with the reviewer reason, then the run resumes', () => {
    const d = decideApprovalResolution(
      { kind: 'ResolvePendingApproval', decision: 'deny', principalId: 'alice', reason: 'no thanks' },
      state(),
    );
    expect(types(d)).toEqual(['approval.resolved', 'tool.call.denied', 'run.resumed']);
    if (d.kind !== 'events') throw new Error('refused');
    expect(d.events[1]).toEqual(
      event(
        'tool.call.denied',
        {
          invocationId: INV,
          reasonCode: 'approval_denied',
          explanation: approvalOutcomeText('approval_denied', 'no thanks'),
          policyVersion: 'p1',
        },
        { runId: RUN, ...USER },
      ),
    );
    expect(d.events[2].data).toEqual({ reason: 'approval_denied' });
  });

  it('a denied uncertainty review fails the invocation', () => {
    const d = decideApprovalResolution(
      { kind: 'ResolvePendingApproval', decision: 'deny', principalId: 'alice', reason: null },
      state({ actionKind: 'uncertain_review' }),
    );
    expect(types(d)).toEqual(['approval.resolved', 'tool.call.failed', 'run.resumed']);
    expect(d.kind === 'events' && d.events[2].data).toEqual({ reason: 'review_denied' });
  });

  it('refuses when the approval is not pending, or the run is not waiting for approval', () => {
    const cmd = {
      kind: 'ResolvePendingApproval',
      decision: 'approve_once',
      principalId: 'alice',
      reason: null,
    } as const;
    expect(types(decideApprovalResolution(cmd, state({}, history.running())))).toBe('conflict');
    const resolvedState = {
      ...pending(),
      state: { ...pending().state, status: 'approved' as const, resolvedBy: 'bob' },
    };
    const d = decideApprovalResolution(cmd, { approval: resolvedState, run: state().run });
    expect(d.kind === 'refused' && d.refusal.message).toBe(`approval ${APPROVAL} is already approved`);
  });

  it('expiry: inform the model (resume) or fail the run with approval_expired', () => {
    const expire = (onExpiry: 'inform_model' | 'fail_run', nowMs = EXPIRY_MS) =>
      decideApprovalResolution(
        { kind: 'ExpirePendingApproval', reaperId: 'system:approval-reaper', nowMs, onExpiry },
        state(),
      );
    expect(types(expire('inform_model'))).toEqual(['approval.resolved', 'tool.call.denied', 'run.resumed']);
    const failed = expire('fail_run');
    expect(types(failed)).toEqual(['approval.resolved', 'tool.call.denied', 'run.failed']);
    expect(failed.kind === 'events' && failed.events[2].data).toEqual({
      reason: 'approval_expired',
      message: `approval ${APPROVAL} expired at 2026-01-01T01:00:00.000Z`,
      errorCode: 'approval_expired',
    });
    expect(types(expire('fail_run', EXPIRY_MS - 1))).toBe('conflict');
    // Expiry never ends a run that is not waiting for this approval.
    const running = decideApprovalResolution(
      { kind: 'ExpirePendingApproval', reaperId: 'r', nowMs: EXPIRY_MS, onExpiry: 'fail_run' },
      state({}, history.running()),
    );
    expect(running.kind === 'refused' && running.refusal.message).toBe(
      `run ${RUN} is running, not waiting for approval`,
    );
  });

  const H1 = 'a'.repeat(64);
  const H2 = 'b'.repeat(64);
  const edit = (over: Record<string, unknown> = {}) =>
    ({
      kind: 'ResolvePendingApproval',
      decision: 'approve_with_edits',
      principalId: 'bob',
      reason: null,
      edited: { arguments: { target: 'y', text: 'hello, world' }, originalHash: H1, editedHash: H2 },
      ...over,
    }) as const;

  it('approve with edits: resolved as approved with both hashes, the edited arguments and the editor', () => {
    const d = decideApprovalResolution(edit(), state());
    expect(types(d)).toEqual(['approval.resolved', 'run.resumed']);
    if (d.kind !== 'events') throw new Error('refused');
    expect(d.events[0].data).toEqual({
      approvalId: APPROVAL,
      decision: 'approved',
      resolvedBy: 'bob',
      reason: null,
      edit: {
        invocationId: INV,
        originalArgumentsHash: H1,
        editedArgumentsHash: H2,
        editedArguments: { target: 'y', text: 'hello, world' },
        editedBy: 'bob',
      },
    });
    expect(d.events[1].data).toEqual({ reason: 'approval_approved_with_edits' });
  });

  it('approve with edits: refused without arguments, for an uncertainty review, or once resolved', () => {
    expect(types(decideApprovalResolution(edit({ edited: undefined }), state()))).toBe('validation_error');
    const review = decideApprovalResolution(edit(), state({ actionKind: 'uncertain_review' }));
    expect(review.kind === 'refused' && review.refusal.details).toMatchObject({ field: 'decision' });
    const resolvedState = { ...pending(), state: { ...pending().state, status: 'denied' as const } };
    expect(types(decideApprovalResolution(edit(), { approval: resolvedState, run: state().run }))).toBe('conflict');
  });

  it('the approval decider never puts an edit on a denial', () => {
    spec
      .given(given([requested]))
      .when({
        ...(resolve('denied') as Extract<ApprovalCommand, { kind: 'ResolveApproval' }>),
        edit: {
          invocationId: INV,
          originalArgumentsHash: H1,
          editedArgumentsHash: H2,
          editedArguments: {},
          editedBy: 'alice',
        },
      })
      .thenRefuses('validation_error');
  });

  it('a cancel reaps pending approvals: resolved as denied, a tool call refused with run_cancelled', () => {
    const d = decideReapOnCancel([pending(), pending({ actionKind: 'uncertain_review' })], 'alice');
    expect(types(d)).toEqual(['approval.resolved', 'tool.call.denied', 'approval.resolved']);
    expect(d.kind === 'events' && d.events[1].data).toMatchObject({ reasonCode: 'run_cancelled' });
  });
});
