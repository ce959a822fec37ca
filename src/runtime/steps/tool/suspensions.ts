import { approvalSummary } from '../../../domain/tools/outcomes';
import type { ToolSpec } from '../../../domain/tools/tool-spec';
import type { PolicyDecision } from '../../../policy/policy-engine';
import type { InvocationRecord } from '../../../ports/tool-records';
import { evolveAll } from '../../../domain/deciders/decider';
import { toolInvocationDecider } from '../../../domain/deciders/tool-invocation';
import type { NewEvent } from '../../../domain/events/payloads';
import { decideApprovalRequest } from '../events';
import { decided, type CallScope } from './call-scope';
import type { ToolCallOutcome } from './types';
import type { ToolExtensions } from '../../../tools/tool-extensions';

type Suspend = Extract<ToolCallOutcome, { kind: 'suspend' }>;

/** Waits on an approval: nothing new is recorded unless `before` says so. */
export function waitFor(approvalId: string, before: NewEvent[] = []): Suspend {
  return { kind: 'suspend', before, awaiting: { kind: 'approval', approvalId } };
}

/** `approval.requested` for this call, asked of the approval decider; the call's state follows it. */
function requested(
  s: CallScope,
  spec: ToolSpec,
  args: Record<string, unknown>,
  request: { actionKind: 'tool_call' | 'uncertain_review'; actionSummary: string; policyReason: string },
  expiry: { expiresAt: string | null; policyVersion: string },
): { approvalId: string; events: NewEvent[] } {
  const { p, ctx } = s;
  const approvalId = p.ids.uuid();
  p.telemetry.metrics.approvalRequested(spec.name, request.actionKind);
  const events = decideApprovalRequest(ctx.runId, {
    kind: 'RequestApproval',
    approvalId,
    ...request,
    principalId: ctx.principal.principalId,
    invocationId: s.invocationId,
    toolName: spec.name,
    arguments: args,
    risk: spec.risk,
    ...expiry,
  });
  s.inv = evolveAll(toolInvocationDecider, s.inv, events);
  return { approvalId, events };
}

/**
 * The policy requires a human's approval: `approval.requested`, then the run waits (plan §9.3). A
 * tool may word what the human is asked (`ToolExtensions.approvalSummary`: a schedule's cadence and
 * next firings); otherwise the generic summary of its arguments.
 */
export function requestApproval(
  s: CallScope,
  spec: ToolSpec,
  args: Record<string, unknown>,
  decision: PolicyDecision,
  ext: Pick<ToolExtensions, 'approvalSummary'> = {},
): Suspend {
  const actionSummary = ext.approvalSummary?.(args) ?? approvalSummary(spec.name, args);
  const { approvalId, events } = requested(
    s,
    spec,
    args,
    { actionKind: 'tool_call', actionSummary, policyReason: decision.reasonCode },
    { expiresAt: s.p.policy.approvalExpiry(s.p.clock.nowMs()), policyVersion: decision.policyVersion },
  );
  return waitFor(approvalId, events);
}

/** A non-idempotent call past its watermark: UNCERTAIN, and a human decides (retry or fail). Never a blind retry. */
export function markUncertain(
  s: CallScope,
  spec: ToolSpec,
  args: Record<string, unknown>,
  inv: InvocationRecord,
  withEvent = true,
): Suspend {
  const reason = `the worker stopped after ${spec.name} began its effect at ${inv.effectSentAt}; whether it took effect is unknown`;
  const before = withEvent ? decided(s, { kind: 'MarkUncertain', reason }) : [];
  const { approvalId, events } = requested(
    s,
    spec,
    args,
    {
      actionKind: 'uncertain_review',
      actionSummary: `review an ambiguous execution: ${approvalSummary(spec.name, args)}`,
      policyReason: 'uncertain_non_idempotent_execution',
    },
    { expiresAt: null, policyVersion: s.p.policy.version },
  );
  return waitFor(approvalId, [...before, ...events]);
}

/** conversation.ask_user: the question id is the invocation id, so an answer is idempotent on (run, question). */
export function askUser(s: CallScope, args: Record<string, unknown>, start: boolean): Suspend {
  const { invocationId } = s;
  return {
    kind: 'suspend',
    before: start ? decided(s, { kind: 'StartToolCall' }) : [],
    awaiting: { kind: 'user', questionId: invocationId, question: String(args.question) },
  };
}
