import type { NewEvent } from '../../domain/events/payloads';
import type { RunOutcome } from '../../domain/run/outcome';
import { decideRun } from './events';
import { checkpointState } from './model-response';
import type { LeaseContext } from './run-context';

/**
 * The `finish` step: the run's single terminal write (the outcome's events and a terminal
 * checkpoint, fenced; a final answer's response leads it). The store clears the provider-opaque
 * continuation from the run's older checkpoints in the same write (plan §10.6).
 */
export async function finish(ctx: LeaseContext, outcome: RunOutcome): Promise<void> {
  const { deps, claim } = ctx;
  // The answer is committed whole with the terminal write: previews not sent yet are moot.
  if (outcome.kind === 'completed') deps.transient.supersede(claim.sessionId, claim.runId);
  await ctx.journal.finish(outcomeEvents(ctx, outcome), (step, from) => checkpointState(step, 'terminal', from));
}

function outcomeEvents(ctx: LeaseContext, outcome: RunOutcome): NewEvent[] {
  const runId = ctx.claim.runId;
  const state = ctx.journal.runState();
  switch (outcome.kind) {
    case 'completed':
      return decideRun(state, runId, { kind: 'CompleteRun', messageId: ctx.deps.ids.uuid(), text: outcome.text });
    case 'failed': {
      const { reason, message, errorCode } = outcome;
      return decideRun(state, runId, { kind: 'FailRun', reason, message, errorCode });
    }
    case 'cancelled':
      return decideRun(state, runId, { kind: 'CancelRun', reason: outcome.reason });
  }
}
