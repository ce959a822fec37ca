import { approvalSummary } from '../../../domain/tools/outcomes';
import type { ToolSpec } from '../../../domain/tools/tool-spec';
import type { PolicyDecision } from '../../../policy/policy-engine';
import type { InvocationRecord } from '../../../ports/tool-records';
import { runEvents, toolEvents } from '../events';
import type { CallScope } from './call-scope';
import type { ToolCallOutcome } from './types';

type Suspend = Extract<ToolCallOutcome, { kind: 'suspend' }>;

/** Waits on an approval that already exists (pending): nothing new is recorded. */
export function waitFor(s: CallScope, approvalId: string): Suspend {
  return { kind: 'suspend', before: [], wait: runEvents.waitingForApproval(s.ctx.runId, { approvalId }) };
}

/** The policy requires a human's approval: `approval.requested`, then the run waits (plan §9.3). */
export function requestApproval(
  s: CallScope,
  spec: ToolSpec,
  args: Record<string, unknown>,
  decision: PolicyDecision,
): Suspend {
  const { p, ctx } = s;
  const approvalId = p.ids.uuid();
  p.telemetry.metrics.approvalRequested(spec.name, 'tool_call');
  const requested = toolEvents.approvalRequested(ctx.runId, {
    approvalId,
    actionKind: 'tool_call',
    principalId: ctx.principal.principalId,
    invocationId: s.invocationId,
    toolName: spec.name,
    arguments: args,
    actionSummary: approvalSummary(spec.name, args),
    policyReason: decision.reasonCode,
    risk: spec.risk,
    expiresAt: p.policy.approvalExpiry(p.clock.nowMs()),
    policyVersion: decision.policyVersion,
  });
  return { ...waitFor(s, approvalId), before: [requested] };
}

/** A non-idempotent call past its watermark: UNCERTAIN, and a human decides (retry or fail). Never a blind retry. */
export function markUncertain(
  s: CallScope,
  spec: ToolSpec,
  args: Record<string, unknown>,
  inv: InvocationRecord,
  withEvent = true,
): Suspend {
  const { p, ctx } = s;
  const approvalId = p.ids.uuid();
  const reason = `the worker stopped after ${spec.name} began its effect at ${inv.effectSentAt}; whether it took effect is unknown`;
  const before = withEvent ? [toolEvents.uncertain(ctx.runId, { invocationId: s.invocationId, reason })] : [];
  p.telemetry.metrics.approvalRequested(spec.name, 'uncertain_review');
  const requested = toolEvents.approvalRequested(ctx.runId, {
    approvalId,
    actionKind: 'uncertain_review',
    principalId: ctx.principal.principalId,
    invocationId: s.invocationId,
    toolName: spec.name,
    arguments: args,
    actionSummary: `review an ambiguous execution: ${approvalSummary(spec.name, args)}`,
    policyReason: 'uncertain_non_idempotent_execution',
    risk: spec.risk,
    expiresAt: null,
    policyVersion: p.policy.version,
  });
  return { ...waitFor(s, approvalId), before: [...before, requested] };
}

/** conversation.ask_user: the question id is the invocation id, so an answer is idempotent on (run, question). */
export function askUser(s: CallScope, args: Record<string, unknown>, start: boolean): Suspend {
  const { ctx, invocationId } = s;
  return {
    kind: 'suspend',
    before: start ? [toolEvents.started(ctx.runId, { invocationId })] : [],
    wait: runEvents.waitingForUser(ctx.runId, { questionId: invocationId, question: String(args.question) }),
  };
}
