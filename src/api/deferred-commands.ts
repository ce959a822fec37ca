import type { CommandBus } from '@nestjs/cqrs';
import { ResolveApprovalCommand } from '../application/approvals/commands';
import { ProvideRunInputCommand } from '../application/runs/provide-input';
import type { Principal } from '../domain/principal';

/**
 * The two commands the HTTP API calls that the tools/approvals work owns. Kept behind these two
 * functions so the controllers only know the wire shapes.
 */
export async function deliverRunInput(
  commands: CommandBus,
  principal: Principal,
  runId: string,
  text: string,
): Promise<{ status: string; outcome: string }> {
  const r = await commands.execute(new ProvideRunInputCommand(principal, runId, text));
  return { status: 'queued', outcome: r.outcome };
}

export async function resolveApproval(
  commands: CommandBus,
  principal: Principal,
  approvalId: string,
  decision: 'approve_once' | 'deny',
  reason: string | null,
): Promise<{ status: string; run: string }> {
  const r = await commands.execute(new ResolveApprovalCommand(principal, approvalId, decision, reason));
  return { status: r.status, run: r.run };
}
