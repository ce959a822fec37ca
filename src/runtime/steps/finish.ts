import type { NewEvent } from '../../domain/events/payloads';
import type { RunOutcome } from '../../domain/run/outcome';
import { runEvents } from './events';
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
  switch (outcome.kind) {
    case 'completed': {
      const messageId = ctx.deps.ids.uuid();
      return [
        runEvents.assistantMessage(runId, { messageId, text: outcome.text }),
        runEvents.completed(runId, { messageId }),
      ];
    }
    case 'failed':
      return [
        runEvents.failed(runId, { reason: outcome.reason, message: outcome.message, errorCode: outcome.errorCode }),
      ];
    case 'cancelled':
      return [runEvents.cancelled(runId, { reason: outcome.reason })];
  }
}
