import type { ApprovalActionKind, ApprovalEdit } from '../events/payloads';
import { APPROVAL_DENIED, APPROVAL_EXPIRED, approvalOutcomeText, RUN_CANCELLED } from '../tools/outcomes';
import { approvalDecider, type ApprovalState } from './approval';
import { ConflictError, ValidationError } from '../errors';
import { accept, combine, refuse, type Actor, type Decision } from './decider';
import { runDecider, type RunState } from './run';
import { toolInvocationDecider, toolInvocationStateOf } from './tool-invocation';

/**
 * The approval-side edges of a run (plan §9.3) decided across three aggregates: the approval is
 * resolved, its tool invocation refused when it did not happen, and the run resumed or ended.
 * Each event is still built by its own aggregate's decider; this module only composes them.
 */
export interface PendingApproval {
  readonly state: ApprovalState;
  readonly runId: string;
  readonly actionKind: ApprovalActionKind;
  readonly invocationId: string | null;
  readonly policyVersion: string | null;
}

/** The run and one of its approvals, as a resolution needs them. */
export interface ApprovalResolutionState {
  readonly approval: PendingApproval;
  readonly run: RunState;
}

/**
 * A human approves once, approves with edited arguments, or denies (`ResolveApprovalCommand` of the
 * API). `edited` (only with `approve_with_edits`) holds arguments the application already checked
 * against the tool's schema and the policy, with both canonical hashes (ADR 0044).
 */
export interface ResolvePendingApproval {
  readonly kind: 'ResolvePendingApproval';
  readonly decision: 'approve_once' | 'approve_with_edits' | 'deny';
  readonly principalId: string;
  readonly reason: string | null;
  readonly edited?: {
    readonly arguments: Record<string, unknown>;
    readonly originalHash: string;
    readonly editedHash: string;
  };
}

/** The reaper expires an approval past its deadline: the run resumes to tell the user, or fails. */
export interface ExpirePendingApproval {
  readonly kind: 'ExpirePendingApproval';
  readonly reaperId: string;
  readonly nowMs: number;
  readonly onExpiry: 'inform_model' | 'fail_run';
}

export type ApprovalResolutionCommand = ResolvePendingApproval | ExpirePendingApproval;

/**
 * The invocation's state while its approval is pending, as the tool_invocations projection keeps it:
 * a `tool_call` approval parks its invocation in WAITING_FOR_APPROVAL, an uncertainty review leaves
 * it UNCERTAIN.
 */
function invocationWhilePending(a: PendingApproval) {
  return toolInvocationStateOf(
    a.invocationId!,
    a.actionKind === 'uncertain_review' ? 'uncertain' : 'waiting_for_approval',
  );
}

/**
 * The structured refusal the model receives instead of the tool's result (fixed fields: code,
 * message): a denied uncertainty review fails the invocation; anything else refuses it. Recorded as
 * the user's, whoever resolved (as it always was).
 */
function refusal(
  a: PendingApproval,
  actorId: string,
  code: 'review_failed' | typeof APPROVAL_DENIED | typeof APPROVAL_EXPIRED | typeof RUN_CANCELLED,
  reason: string | null,
): Decision {
  const base = { runId: a.runId, invocationId: a.invocationId!, actor: { actorType: 'user' as const, actorId } };
  if (code === 'review_failed') {
    return toolInvocationDecider.decide(
      {
        ...base,
        kind: 'FailToolCall',
        errorCode: 'uncertain_marked_failed',
        message:
          'a human reviewer marked the ambiguous execution as failed; it may or may not have taken effect and will not be retried',
        retryable: false,
        latencyMs: 0,
      },
      invocationWhilePending(a),
    );
  }
  return toolInvocationDecider.decide(
    {
      ...base,
      kind: 'DenyToolCall',
      reasonCode: code,
      explanation: approvalOutcomeText(code, reason),
      policyVersion: a.policyVersion ?? 'unknown',
    },
    invocationWhilePending(a),
  );
}

/**
 * The edit an `approve_with_edits` records, or why it is refused: only a pending tool call's
 * approval can be edited (an uncertainty review decides about a call that already ran).
 */
function editOf(cmd: ResolvePendingApproval, a: PendingApproval): ApprovalEdit | null | ValidationError {
  // A resolved approval is refused as such by the approval decider, edit or not.
  if (cmd.decision !== 'approve_with_edits' || a.state.status !== 'pending') return null;
  if (a.actionKind !== 'tool_call' || !a.invocationId)
    return new ValidationError(`approval ${a.state.approvalId} is not a tool call's; its arguments cannot be edited`, {
      field: 'decision',
      actionKind: a.actionKind,
    });
  if (!cmd.edited) return new ValidationError('approve_with_edits needs arguments', { field: 'arguments' });
  return {
    invocationId: a.invocationId,
    originalArgumentsHash: cmd.edited.originalHash,
    editedArgumentsHash: cmd.edited.editedHash,
    editedArguments: cmd.edited.arguments,
    editedBy: cmd.principalId,
  };
}

function resolve(cmd: ResolvePendingApproval, { approval: a, run }: ApprovalResolutionState): Decision {
  const actor: Actor = { actorType: 'user', actorId: cmd.principalId };
  const approved = cmd.decision !== 'deny';
  const review = a.actionKind === 'uncertain_review';
  const edit = editOf(cmd, a);
  if (edit instanceof ValidationError) return refuse(edit);
  return combine(
    approvalDecider.decide(
      {
        kind: 'ResolveApproval',
        runId: a.runId,
        approvalId: a.state.approvalId!,
        actor,
        decision: approved ? 'approved' : 'denied',
        resolvedBy: cmd.principalId,
        reason: cmd.reason,
        edit,
      },
      a.state,
    ),
    ...(!approved && a.invocationId
      ? [refusal(a, cmd.principalId, review ? 'review_failed' : APPROVAL_DENIED, cmd.reason)]
      : []),
    runDecider.decide(
      {
        kind: 'ResumeRun',
        runId: a.runId,
        actor,
        awaiting: 'approval',
        reason: edit
          ? 'approval_approved_with_edits'
          : `${review ? 'review' : 'approval'}_${approved ? 'approved' : 'denied'}`,
      },
      run,
    ),
  );
}

function expire(cmd: ExpirePendingApproval, { approval: a, run }: ApprovalResolutionState): Decision {
  const actor: Actor = { actorType: 'system', actorId: cmd.reaperId };
  const base = { runId: a.runId, actor };
  return combine(
    approvalDecider.decide(
      { ...base, kind: 'ExpireApproval', approvalId: a.state.approvalId!, nowMs: cmd.nowMs },
      a.state,
    ),
    // Only a run waiting for this approval is failed by its expiry (a resume checks it itself).
    run.status === 'waiting_for_approval'
      ? accept()
      : refuse(
          new ConflictError(`run ${a.runId} is ${run.status}, not waiting for approval`, {
            runId: a.runId,
            status: run.status,
          }),
        ),
    ...(a.invocationId ? [refusal(a, cmd.reaperId, APPROVAL_EXPIRED, null)] : []),
    cmd.onExpiry === 'fail_run'
      ? runDecider.decide(
          {
            ...base,
            kind: 'FailRun',
            reason: 'approval_expired',
            message: `approval ${a.state.approvalId} expired at ${a.state.expiresAt}`,
            errorCode: APPROVAL_EXPIRED,
          },
          run,
        )
      : runDecider.decide({ ...base, kind: 'ResumeRun', awaiting: 'approval', reason: 'approval_expired' }, run),
  );
}

/** Resolves or expires one approval of a waiting run; refused (nothing written) unless both are pending/waiting. */
export function decideApprovalResolution(cmd: ApprovalResolutionCommand, state: ApprovalResolutionState): Decision {
  return cmd.kind === 'ResolvePendingApproval' ? resolve(cmd, state) : expire(cmd, state);
}

/**
 * The events that close a waiting run's pending approvals when it is cancelled: each resolved as
 * denied (`run cancelled`), and a `tool_call` approval's invocation refused with `run_cancelled`.
 */
export function decideReapOnCancel(pending: readonly PendingApproval[], actorId: string): Decision {
  const actor: Actor = { actorType: 'user', actorId };
  return combine(
    ...pending.flatMap((a) => [
      approvalDecider.decide(
        {
          kind: 'ResolveApproval',
          runId: a.runId,
          approvalId: a.state.approvalId!,
          actor,
          decision: 'denied',
          resolvedBy: actorId,
          reason: 'run cancelled',
        },
        a.state,
      ),
      ...(a.invocationId && a.actionKind === 'tool_call' ? [refusal(a, actorId, RUN_CANCELLED, null)] : []),
    ]),
  );
}
