import type { InterruptMode } from '../run/multitask';
import { RUN_INTERRUPTED, interruptedCallMessage } from '../tools/outcomes';
import type { PendingApproval } from './approval-resolution';
import { approvalDecider } from './approval';
import { combine, type Actor, type Decision } from './decider';
import { runDecider, type RunState } from './run';
import { toolInvocationDecider, toolInvocationStateOf, type ToolInvocationStatus } from './tool-invocation';

/** An invocation of the run without an outcome yet (its call would dangle without one). */
export interface OpenInvocation {
  readonly invocationId: string;
  readonly status: ToolInvocationStatus;
}

/** What stopping a run for a newer message needs: the run, its pending approvals and open invocations. */
export interface InterruptState {
  readonly run: RunState;
  /** Pending approvals of a run waiting for approval (resolved as denied when it ends). */
  readonly pendingApprovals: readonly PendingApproval[];
  /** Its invocations with no outcome; each gets a synthetic one when the run ends. */
  readonly openInvocations: readonly OpenInvocation[];
}

export interface InterruptCommand {
  readonly runId: string;
  readonly byRunId: string;
  readonly mode: InterruptMode;
  readonly actor: Actor;
  readonly reason: string | null;
}

/**
 * A newer message stops the run (issue 33). A RUNNING run is asked to stop at its next safe point
 * (`run.interrupt_requested`; its worker ends it, `decideInterruptedEnd`). A QUEUED or waiting run
 * (for an approval, the user, or its delegated children) has no worker, so it ends here, in the same
 * decision as the message that stops it.
 */
export function decideInterrupt(cmd: InterruptCommand, state: InterruptState): Decision {
  const { status } = state.run;
  // A parent waiting for its children ends here too; the join sweep then cancels its active children.
  if (
    status === 'queued' ||
    status === 'waiting_for_approval' ||
    status === 'waiting_for_user' ||
    status === 'waiting_for_children'
  ) {
    return decideInterruptedEnd(cmd, state);
  }
  return runDecider.decide({ kind: 'RequestInterrupt', ...cmd }, state.run);
}

/**
 * The run's `interrupted` ending: its pending approvals resolved as denied, a synthetic result for
 * every call without one — saying it was interrupted, and whether it had started — so no provider is
 * ever sent an unanswered tool call, then `run.interrupted`.
 */
export function decideInterruptedEnd(cmd: InterruptCommand, state: InterruptState): Decision {
  const reason = 'run interrupted by a newer message';
  const approvals = state.pendingApprovals.map((a) =>
    approvalDecider.decide(
      {
        kind: 'ResolveApproval',
        runId: a.runId,
        approvalId: a.state.approvalId!,
        actor: cmd.actor,
        decision: 'denied',
        resolvedBy: cmd.actor.actorId ?? cmd.actor.actorType,
        reason,
      },
      a.state,
    ),
  );
  const results = state.openInvocations.map((inv) =>
    toolInvocationDecider.decide(
      {
        kind: 'FailToolCall',
        runId: cmd.runId,
        invocationId: inv.invocationId,
        actor: cmd.actor,
        errorCode: RUN_INTERRUPTED,
        // A run waiting for the user has one running call: the question the new message leaves unanswered.
        message: interruptedCallMessage(
          inv.status,
          state.run.status === 'waiting_for_user' && inv.status === 'running',
        ),
        retryable: false,
        latencyMs: 0,
      },
      toolInvocationStateOf(inv.invocationId, inv.status),
    ),
  );
  return combine(...approvals, ...results, runDecider.decide({ kind: 'InterruptRun', ...cmd }, state.run));
}
