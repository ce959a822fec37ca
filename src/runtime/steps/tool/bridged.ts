import type { NewEvent } from '../../../domain/events/payloads';
import type { BridgeCallOutcome } from '../../../ports/tool-bridge';
import type { InvocationRecord } from '../../../ports/tool-records';
import type { HeldCall } from './bridge-hold';
import { decided, type CallScope } from './call-scope';
import type { ToolCallOutcome } from './types';

/**
 * What a bridged call that needs a human's *answer* is refused with: `conversation.ask_user` and
 * `delegate.run` belong to the model's own turn. (A call that needs an *approval* holds the program.)
 */
export const APPROVAL_REQUIRED_VIA_BRIDGE = 'approval_required_via_bridge';

/** The answer a program gets, as it is being stopped, for a call made while it is held for a human. */
export const PROGRAM_HELD: BridgeCallOutcome = {
  ok: false,
  errorCode: 'approval_pending',
  message: 'a call of this program waits for a human; the program is stopped and runs again after the decision',
};

/** A repeated call's recorded outcome: the program ran again (after a crash or a decision). */
export function recordedOutcome(existing: InvocationRecord): BridgeCallOutcome {
  if (existing.status === 'succeeded' && existing.result) return { ok: true, output: existing.result };
  return {
    ok: false,
    errorCode: existing.status === 'denied' ? 'call_denied' : 'call_failed',
    message: `${existing.toolName} already ended ${existing.status}; it is not run again`,
  };
}

/**
 * The program's pass ends in the held call's suspension: the program invocation stands authorized
 * again (`tool.call.suspended`, with nothing of its own done) and the run waits on the same approval
 * (or review) a model's call would.
 */
export function suspendForBridgedCall(s: CallScope, held: HeldCall): ToolCallOutcome {
  const { suspension, approvalId } = held;
  const events = decided(s, {
    kind: 'SuspendToolCall',
    reason: 'bridged_call_awaiting_approval',
    awaitingInvocationId: held.invocationId,
    approvalId,
  });
  return { ...suspension, before: [...suspension.before, ...events] };
}

/**
 * The program's answer to one bridged call, from the outcome event the pipeline wrote for its
 * invocation (`tool.call.completed`, `.failed` or `.denied`), or from how its pass ended when it
 * wrote none (a loop, a stop).
 */
export function bridgeOutcomeOf(
  invocationId: string,
  written: readonly NewEvent[],
  pass: ToolCallOutcome,
): BridgeCallOutcome {
  for (let i = written.length - 1; i >= 0; i--) {
    const { type } = written[i];
    const d = written[i].data as Partial<Record<string, unknown>>;
    if (d.invocationId !== invocationId) continue;
    const text = (k: string) => (typeof d[k] === 'string' ? d[k] : '');
    if (type === 'tool.call.completed') return { ok: true, output: d.result as Record<string, unknown> };
    if (type === 'tool.call.failed') return { ok: false, errorCode: text('errorCode'), message: text('message') };
    if (type === 'tool.call.denied') return { ok: false, errorCode: text('reasonCode'), message: text('explanation') };
  }
  if (pass.kind === 'loop_detected')
    return {
      ok: false,
      errorCode: 'loop_detected',
      message: `${pass.toolName} was called repeatedly with no new result`,
    };
  return { ok: false, errorCode: 'bridge_call_interrupted', message: 'the run stopped before the call finished' };
}
