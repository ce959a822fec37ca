import type { CallScope } from './call-scope';

/**
 * Approve with edits (issue 33, ADR 0044): the arguments a human approved in place of the model's,
 * when this call's approval was resolved that way. Read on every pass of a call that was proposed
 * before (waiting, authorized, or started by a lease that crashed), so a resumed or recovered call
 * runs with the edited arguments too, never the model's (or the program's, for a bridged call).
 * Null for a call nobody edited.
 */
export async function editedArgumentsOf(s: CallScope): Promise<Record<string, unknown> | null> {
  if (!s.existing || s.existing.status === 'proposed') return null;
  const approval = await s.p.records.approvalForInvocation(s.invocationId, 'tool_call');
  return approval?.status === 'approved' ? (approval.editedArguments ?? null) : null;
}
