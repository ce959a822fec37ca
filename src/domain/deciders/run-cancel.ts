import { decideReapOnCancel, type PendingApproval } from './approval-resolution';
import { combine, type Decision } from './decider';
import { runDecider, type RunState } from './run';

/** A run and, when it waits for approval, its pending approvals (reaped by the cancel). */
export interface CancelState {
  readonly run: RunState;
  readonly pendingApprovals: readonly PendingApproval[];
}

/** A user's cancel (`POST /v1/runs/{id}/cancel`, plan §9.3). */
export interface CancelRunRequest {
  readonly kind: 'CancelRunRequest';
  readonly runId: string;
  readonly principalId: string;
  readonly reason: string | null;
}

/**
 * QUEUED and waiting runs have no worker watching them, so they are cancelled directly; a RUNNING
 * run is asked to stop and its worker finalizes it. A run waiting for approval has its pending
 * approvals reaped in the same decision (resolved as denied, the invocation refused with
 * `run_cancelled`), before `run.cancelled`.
 */
export function decideCancel(cmd: CancelRunRequest, state: CancelState): Decision {
  const actor = { actorType: 'user' as const, actorId: cmd.principalId };
  const reaped =
    state.run.status === 'waiting_for_approval' ? [decideReapOnCancel(state.pendingApprovals, cmd.principalId)] : [];
  return combine(
    ...reaped,
    runDecider.decide({ kind: 'RequestCancel', runId: cmd.runId, actor, reason: cmd.reason }, state.run),
  );
}
