import { repeatsWithoutNewEvidence } from '../../../domain/run/loop-detection';
import type { InvocationRecord } from '../../../ports/tool-records';
import { decided, type CallScope } from './call-scope';
import type { ToolCallOutcome } from './types';

/**
 * A call not proposed before: refused as a loop when the run already made it, identically and with
 * identical answers, `LOOP_THRESHOLD` times (plan §6.5); otherwise `tool.call.proposed` is queued.
 */
export async function propose(s: CallScope, sameCall?: readonly InvocationRecord[]): Promise<ToolCallOutcome | null> {
  const { call, ctx, tool } = s;
  if (tool) {
    const prior = sameCall ?? (await s.p.runs.priorInvocations(ctx.runId, call.name, s.argsHash));
    if (repeatsWithoutNewEvidence(prior)) return { kind: 'loop_detected', toolName: call.name };
  }
  await s.later(
    decided(s, {
      kind: 'ProposeToolCall',
      step: ctx.step,
      callId: call.callId,
      toolName: call.name,
      toolVersion: tool?.spec.version ?? null,
      arguments: call.arguments,
      argumentsHash: s.argsHash,
      idempotencyKey: s.key,
      ...(s.bridgedFrom ? { bridgedFrom: s.bridgedFrom } : {}),
    }),
  );
  return null;
}
