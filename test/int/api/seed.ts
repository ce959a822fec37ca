import { randomUUID } from 'node:crypto';
import type { Platform } from '../../../src/composition/platform';

/** Appends a real approval.requested (and optionally approval.resolved) to a run's session. */
export async function seedApproval(
  platform: Platform,
  s: { sessionId: string; runId: string; tenantId: string; principalId: string },
  resolved: boolean,
): Promise<string> {
  const approvalId = randomUUID();
  await platform.store.append(
    s.sessionId,
    [
      {
        type: 'approval.requested',
        runId: s.runId,
        actorType: 'worker',
        data: {
          approvalId,
          actionKind: 'tool_call',
          principalId: s.principalId,
          invocationId: null,
          toolName: 'demo.write',
          arguments: { path: 'a.txt' },
          actionSummary: 'write a file',
          policyReason: 'writes need approval',
          risk: 'medium',
          expiresAt: null,
          policyVersion: 'test',
        },
      },
      ...(resolved
        ? [
            {
              type: 'approval.resolved' as const,
              runId: s.runId,
              actorType: 'user' as const,
              data: { approvalId, decision: 'denied' as const, resolvedBy: s.principalId, reason: 'no' },
            },
          ]
        : []),
    ],
    { tenantId: s.tenantId },
  );
  return approvalId;
}
