import { runStateOf } from '../../domain/deciders/run';
import { decideCancel, type CancelState } from '../../domain/deciders/run-cancel';
import { ConcurrencyConflict, NotFoundError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { RunStatus } from '../../domain/run/status';
import { isTerminal } from '../../domain/run/status';
import type { EventStore } from '../../ports/event-store';
import type { RunRepository } from '../../ports/run-store';
import type { SessionRepository } from '../../ports/session-repository';
import type { ToolRecordStore } from '../../ports/tool-records';
import { pendingApprovalOf } from '../approvals/approval-service';
import { handleCommand, type LoadedState } from '../command-handler';

export interface CancelResult {
  readonly runId: string;
  /** `cancelled`: done now; `cancel_requested`: a worker will stop at its next check; `already_terminal`. */
  readonly outcome: 'cancelled' | 'cancel_requested' | 'already_terminal';
  readonly status: RunStatus;
}

/** What a cancel reads and writes. */
export interface CancelDeps {
  readonly store: EventStore;
  readonly runs: RunRepository;
  readonly sessions: SessionRepository;
  readonly records: ToolRecordStore;
}

/**
 * QUEUED and waiting runs have no worker watching them, so they are cancelled directly; a RUNNING
 * run is asked to stop and its worker finalizes it (plan §9.3). A waiting run's pending approvals are
 * reaped in the same append (resolved as denied, the invocation refused with `run_cancelled`): the
 * run-cancel decider decides it all. The append is conditional on the session sequence we read, so a
 * claim racing with the cancel is seen.
 */
export function cancelRun(
  deps: CancelDeps,
  principal: Principal,
  runId: string,
  reason: string | null,
): Promise<CancelResult> {
  return handleCommand<CancelState, CancelResult>(deps.store, {
    load: () => loadCancel(deps, principal, runId),
    decide: (state) =>
      decideCancel({ kind: 'CancelRunRequest', runId, principalId: principal.principalId, reason }, state),
    result: ({ state: { run } }) => {
      const status = run.status as RunStatus;
      if (isTerminal(status)) return { runId, outcome: 'already_terminal', status };
      if (status === 'running') return { runId, outcome: 'cancel_requested', status };
      return { runId, outcome: 'cancelled', status: 'cancelled' };
    },
    exhausted: () =>
      new ConcurrencyConflict(`run ${runId} kept changing while it was being cancelled; try again`, { runId }),
  });
}

async function loadCancel(deps: CancelDeps, principal: Principal, runId: string): Promise<LoadedState<CancelState>> {
  const notFound = () => new NotFoundError(`run ${runId} not found`, { runId });
  const located = await deps.runs.get(runId, principal);
  if (!located) throw notFound();
  // The sequence is read before the run state it guards, so a claim or resolution committed in
  // between fails our conditional append instead of being overwritten.
  const session = await deps.sessions.get(located.sessionId, principal);
  if (!session) throw notFound();
  const run = await deps.runs.get(runId, principal);
  if (!run) throw notFound();
  const pending = run.status === 'waiting_for_approval' ? await deps.records.pendingApprovalsOfRun(run.id) : [];
  return {
    sessionId: run.sessionId,
    tenantId: principal.tenantId,
    state: { run: runStateOf(run), pendingApprovals: pending.map(pendingApprovalOf) },
    expectedSequence: session.lastSequence,
  };
}
