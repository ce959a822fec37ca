import { LeaseFencedError } from '../../domain/errors';
import { CANCEL_REQUESTED } from '../../domain/run/outcome';
import { stopReasonOf } from '../stop-reason';
import { isTerminal } from '../../domain/run/status';
import type { RunState } from '../../domain/deciders/run';
import { finish } from './finish';
import type { LeaseContext, RunLoopResult } from './run-context';

/**
 * The `stop` step, for a stop that is not a terminal outcome: release the run on shutdown, finish it
 * cancelled on a cancel (also one requested just before a shutdown, which the release finds), vanish
 * when fenced or abandoned (a simulated crash). What the journal holds is committed first, as it
 * would have been at the next model call's start.
 */
export async function stop(ctx: LeaseContext): Promise<RunLoopResult> {
  const reason = stopReasonOf(ctx.signal) ?? 'shutdown';
  try {
    await ctx.journal.settle();
    // A run found terminal when the lease began has nothing left to release.
    if (isTerminalStatus(ctx.journal.runState().status)) return 'finished';
    if (reason === 'abandon') return 'abandoned';
    if (reason === 'fenced') return 'fenced';
    // A shutdown hands the run back, unless a cancel the loop had not seen yet refuses that.
    if (reason === 'shutdown' && (await ctx.journal.release(ctx.claim.workerId, 'worker shutting down')) === 'released')
      return 'released';
    await finish(ctx, CANCEL_REQUESTED);
    return 'finished';
  } catch (e) {
    if (e instanceof LeaseFencedError) return 'fenced';
    throw e;
  }
}

function isTerminalStatus(status: RunState['status']): boolean {
  return status !== 'absent' && isTerminal(status);
}
