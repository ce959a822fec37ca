import { CANCEL_REQUESTED, type RunOutcome } from '../../domain/run/outcome';
import { decideRun } from './events';
import { checkpointState } from './model-response';
import type { LeaseContext, Suspension } from './run-context';

/**
 * The `suspend` step: parks the run for a human (plan §9.3, §27.3) or for its children (§27.6), in
 * one fenced append and in this order: the approval (or uncertainty) record, a checkpoint at the
 * same resume point, then WAITING_*, which clears the lease owner; the commit's NOTIFY is the event.
 * The invocation was persisted earlier. A wait for children also creates the children's sessions
 * and runs in the same transaction (ADR 0037). A cancel requested while the tools ran wins over
 * waiting: then the run ends cancelled instead (the returned outcome).
 */
export async function suspend(
  ctx: LeaseContext,
  step: number,
  s: Suspension,
): Promise<'suspended' | 'stopped' | RunOutcome> {
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
  const { awaiting } = s;
  if (awaiting.kind === 'children') {
    const wait = decideRun(run, claim.runId, {
      kind: 'SuspendForChildren',
      invocationId: awaiting.invocationId,
      children: awaiting.children.map((c) => ({ runId: c.runId, sessionId: c.sessionId })),
    });
    const refused = await journal.suspendWithChildren(
      [...s.before, ...checkpointed, ...wait],
      next,
      awaiting.children,
      ctx.signal,
    );
    if (refused === 'cancelled') return CANCEL_REQUESTED;
    return refused === 'stopped' ? 'stopped' : 'suspended';
  }
  const wait = decideRun(
    run,
    claim.runId,
    awaiting.kind === 'approval'
      ? { kind: 'SuspendForApproval', approvalId: awaiting.approvalId }
      : { kind: 'SuspendForUser', questionId: awaiting.questionId, question: awaiting.question },
  );
  await journal.commit([...s.before, ...checkpointed, ...wait], next);
  return 'suspended';
}
