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
  decision: 'approve_once' | 'approve_with_edits' | 'deny',
  reason: string | null,
  edited?: Record<string, unknown>,
): Promise<{ status: string; run: string }> {
  const r = await commands.execute(new ResolveApprovalCommand(principal, approvalId, decision, reason, edited));
  return { status: r.status, run: r.run };
}
