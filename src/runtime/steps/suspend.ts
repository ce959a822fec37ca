import { CANCEL_REQUESTED, type RunOutcome } from '../../domain/run/outcome';
import { decideRun } from './events';
import { checkpointState } from './model-response';
import type { LeaseContext, Suspension } from './run-context';

/**
 * The `suspend` step: parks the run for a human (plan §9.3, §27.3), in one fenced append and in this
 * order: the approval (or uncertainty) record, a checkpoint at the same resume point, then
 * WAITING_*, which clears the lease owner; the commit's NOTIFY is the event. The invocation was
 * persisted earlier. A cancel requested while the tools ran wins over waiting for a human: then
 * the run ends cancelled instead (the returned outcome).
 */
export async function suspend(ctx: LeaseContext, step: number, s: Suspension): Promise<'suspended' | RunOutcome> {
  const { deps, claim, journal } = ctx;
  if ((await deps.runs.get(claim.runId, null))?.cancelRequestedAt) return CANCEL_REQUESTED;
  // What the pipeline queued (the proposal) is persisted before the suspension's own append.
  await journal.beforeRead();
  const cp = journal.checkpoint;
  const state =
    cp && cp.state.step === step && cp.state.phase === 'model_completed'
      ? cp.state
      : checkpointState(step, 'model_completed', cp?.state.conversationRange.fromSequence ?? 0);
  const next = journal.nextCheckpoint(state);
  const run = journal.runState();
  const checkpointed = decideRun(run, claim.runId, { kind: 'CheckpointRun', checkpointVersion: next.version, step });
  const wait = decideRun(
    run,
    claim.runId,
    s.awaiting.kind === 'approval'
      ? { kind: 'SuspendForApproval', approvalId: s.awaiting.approvalId }
      : { kind: 'SuspendForUser', questionId: s.awaiting.questionId, question: s.awaiting.question },
  );
  await journal.commit([...s.before, ...checkpointed, ...wait], next);
  return 'suspended';
}
