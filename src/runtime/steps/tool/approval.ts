import type { Authorized } from './authorize';
import { decided, deny, fail, type CallScope } from './call-scope';
import { askUser, markUncertain, requestApproval, waitFor } from './suspensions';
import { delegate } from './delegate';
import type { ToolCallOutcome } from './types';

/** The call may start (`proceed`), or this is what happens instead. */
export type Approval = 'proceed' | ToolCallOutcome;

/**
 * Step 7 of plan §8.3, by where the invocation stands: a new call is authorized or waits for an
 * approval; a call that waited is authorized, refused or still waits; a call a crashed lease had
 * started is retried when safe, or reviewed by a human (UNCERTAIN, plan §8.4).
 */
export async function approve(s: CallScope, a: Authorized): Promise<Approval> {
  const status = s.existing?.status ?? 'proposed';
  switch (status) {
    case 'proposed':
      if (a.decision.decision === 'require_approval') return requestApproval(s, a.tool.spec, a.args, a.decision, a.ext);
      await authorized(s, a.decision);
      return 'proceed';
    case 'waiting_for_approval':
      return afterApproval(s, a);
    case 'authorized':
      return 'proceed'; // crashed after authorization, before the tool started: nothing ran yet
    case 'running':
      if (a.tool.spec.idempotency === 'non_idempotent' && s.existing?.effectSentAt)
        return markUncertain(s, a.tool.spec, a.args, s.existing);
      if (a.ext.control === 'ask_user') return askUser(s, a.args, false);
      if (a.ext.control === 'delegate') return delegate(s, a.args, false);
      return 'proceed'; // read-only, idempotent and conditional (we always pass the key) tools retry (§8.4)
    case 'uncertain':
      return afterReview(s, a);
    default:
      return fail(s, 'internal_error', `invocation ${s.invocationId} is in unexpected status ${status}`, false);
  }
}

function authorized(s: CallScope, d: { decision: string; reasonCode: string; policyVersion: string }): Promise<void> {
  const { decision, reasonCode, policyVersion } = d;
  return s.later(decided(s, { kind: 'AuthorizeToolCall', decision, reasonCode, policyVersion }));
}

async function afterApproval(s: CallScope, a: Authorized): Promise<Approval> {
  const approval = await s.p.records.approvalForInvocation(s.invocationId, 'tool_call');
  if (!approval) return requestApproval(s, a.tool.spec, a.args, a.decision, a.ext);
  if (approval.status === 'pending') return waitFor(approval.id);
  if (approval.status !== 'approved') {
    // The resolver normally records the denial itself; this covers a resolution without it.
    const reason = approval.status === 'expired' ? 'approval_expired' : 'approval_denied';
    return deny(s, reason, 'the action was not approved, so it was not performed');
  }
  // Revalidated above: a policy that now denies has already refused; otherwise the human's approval stands.
  await authorized(s, {
    decision: 'approved',
    reasonCode: s.editedArguments
      ? 'human_approved_with_edits'
      : a.decision.decision === 'require_approval'
        ? 'human_approved'
        : a.decision.reasonCode,
    policyVersion: a.decision.policyVersion,
  });
  return 'proceed';
}

async function afterReview(s: CallScope, a: Authorized): Promise<Approval> {
  const review = await s.p.records.approvalForInvocation(s.invocationId, 'uncertain_review');
  if (!review) return markUncertain(s, a.tool.spec, a.args, s.existing!, false);
  if (review.status === 'pending') return waitFor(review.id);
  if (review.status !== 'approved')
    return fail(s, 'uncertain_marked_failed', 'a human reviewer marked the ambiguous execution as failed', false);
  return 'proceed'; // a human chose "retry": execute again, knowingly
}
