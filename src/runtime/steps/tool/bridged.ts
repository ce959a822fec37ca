import type { NewEvent } from '../../../domain/events/payloads';
import type { BridgeCallOutcome } from '../../../ports/tool-bridge';
import type { ToolCallOutcome } from './types';

/** What a bridged call that needs a human's approval is refused with (the program cannot wait). */
export const APPROVAL_REQUIRED_VIA_BRIDGE = 'approval_required_via_bridge';

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
