import {
  RUN_CANCELLED,
  RUN_CANCELLED_BEFORE_RETRY,
  RUN_CANCELLED_BEFORE_START,
  RUN_INTERRUPTED,
  interruptedCallMessage,
} from '../../../domain/tools/outcomes';
import { isPureComputation } from '../../../domain/tools/tool-spec';
import type { Authorized } from './authorize';
import { decided, deny, fail, type CallScope } from './call-scope';
import type { ProcessOptions, ToolCallOutcome } from './types';

const STOPPED: ToolCallOutcome = { kind: 'stopped' };

/**
 * Step 8's start: `tool.call.started`, and the watermark before a non-idempotent effect, durable
 * (with whatever was queued before them) before the tool runs. A stop that arrived before the start
 * skips the tool altogether: recovery finds the call proposed or authorized (§8.4). A pure
 * computation (no side effect, read-only: the calculator, the clock) is the exception: running it
 * again changes nothing, so its start is queued with its result. A tool with an effect starts only
 * if no cancel was requested meanwhile (`options.start`). Null once the tool may run.
 */
export async function start(s: CallScope, a: Authorized, options: ProcessOptions): Promise<ToolCallOutcome | null> {
  const { ctx } = s;
  if (ctx.signal.aborted) return STOPPED;
  // A newer message asked the run to stop (issue 33): the safe point is before any tool starts,
  // pure computations included.
  if (ctx.interrupted?.()) return refuseCancelled(s, a);
  const before = s.inv;
  const startEvents = decided(s, { kind: 'StartToolCall' });
  if (isPureComputation(a.tool.spec)) await s.later(startEvents);
  else if (!options.start) await s.now(startEvents);
  else {
    const refused = await options.start(startEvents);
    // Not written: the invocation stands where it stood before the start.
    if (refused !== null) s.inv = before;
    if (refused === 'stopped') return STOPPED;
    if (refused === 'cancelled') return refuseCancelled(s, a);
  }
  // A stop that arrived while a start was being written: its `abort` has already fired, so only
  // this check keeps the tool from running. Recovery retries a safe call and reviews an unsafe one.
  if (ctx.signal.aborted) return STOPPED;
  if (a.tool.spec.idempotency === 'non_idempotent') {
    await s.now(decided(s, { kind: 'MarkEffectStarted' }));
    if (ctx.signal.aborted) return STOPPED;
  }
  return null;
}

/**
 * The run's cancel (or an interrupt, issue 33) was requested before the tool started. A call an
 * earlier lease started (and a crash interrupted) is not retried, and may have taken effect: it
 * failed. Any other call never ran: it is refused.
 */
async function refuseCancelled(s: CallScope, a: Authorized): Promise<ToolCallOutcome> {
  const status = s.existing?.status ?? 'proposed';
  if (s.ctx.interrupted?.()) {
    await fail(s, RUN_INTERRUPTED, interruptedCallMessage(status), false);
    return { kind: 'cancelled' };
  }
  if (status === 'running' || status === 'uncertain') {
    await fail(s, RUN_CANCELLED, RUN_CANCELLED_BEFORE_RETRY, false);
  } else {
    await deny(s, RUN_CANCELLED, RUN_CANCELLED_BEFORE_START, a.decision.policyVersion);
  }
  return { kind: 'cancelled' };
}
