import { eventsOrThrow, WORKER } from '../../domain/deciders/decider';
import { runStateOf } from '../../domain/deciders/run';
import { decideInterruptedEnd } from '../../domain/deciders/run-interrupt';
import type { ToolInvocationStatus } from '../../domain/deciders/tool-invocation';
import type { NewEvent } from '../../domain/events/payloads';
import type { RunOutcome } from '../../domain/run/outcome';
import { decideRun } from './events';
import type { LeaseContext } from './run-context';

/**
 * The `finish` step: the run's single terminal write (the outcome's events, fenced; a final
 * answer's response leads it; no checkpoint, ADR 0057). The store clears the provider-opaque
 * continuation from the run's checkpoints in the same write (plan §10.6).
 */
export async function finish(ctx: LeaseContext, outcome: RunOutcome): Promise<void> {
  const { deps, claim } = ctx;
  // The answer is committed whole with the terminal write: previews not sent yet are moot.
  if (outcome.kind === 'completed') deps.transient.supersede(claim.sessionId, claim.runId);
  const events = (outcome.kind === 'cancelled' && (await interruptedEnding(ctx))) || outcomeEvents(ctx, outcome);
  await ctx.journal.finish(events);
}

/**
 * A stop requested for a newer message (issue 33) ends the run `interrupted`, with a synthetic
 * result for every call it leaves open (run-interrupt.ts). The run row is read afresh (the request
 * may have come after the lease's last write), after what the journal holds is committed, so the
 * open calls read are exactly those without an outcome. Null for a plain cancel.
 */
async function interruptedEnding(ctx: LeaseContext): Promise<NewEvent[] | null> {
  const { deps, claim, journal } = ctx;
  const run = await deps.runs.get(claim.runId, null);
  if (!run?.interrupt) return null;
  await journal.settle();
  await journal.beforeRead();
  const open = await deps.records.openInvocationsOfRun(claim.runId);
  const { mode, byRunId } = run.interrupt;
  const state = {
    run: { ...runStateOf(run), status: 'running' as const },
    pendingApprovals: [],
    openInvocations: open.map((o) => ({ invocationId: o.invocationId, status: o.status as ToolInvocationStatus })),
  };
  const decision = decideInterruptedEnd({ runId: claim.runId, byRunId, mode, actor: WORKER, reason: null }, state);
  return [...eventsOrThrow(decision)];
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
