import { WORKER, type Decision } from '../../domain/deciders/decider';
import { runStateOf } from '../../domain/deciders/run';
import { toolInvocationStateOf, type ToolInvocationStatus } from '../../domain/deciders/tool-invocation';
import { consensusDecider } from '../../domain/deciders/consensus';
import { foldState } from '../../domain/deciders/decider';
import { decideConsensusJoin, type ConsensusJoinState } from '../../domain/consensus/join';
import { decideJoin, type JoinState } from '../../domain/delegation/join';
import { ConcurrencyConflict } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { isTerminal } from '../../domain/run/status';
import type { Logger } from '../../ports/logger';
import type { ChildRunStore } from '../../ports/run-store';
import { handleCommand, type LoadedState } from '../command-handler';
import { cancelRun, type CancelDeps } from './cancel';

export const CHILD_RUN_SERVICE = Symbol('ChildRunService');
export const CHILD_RUN_STORE = Symbol('ChildRunStore');

export interface ChildRunDeps extends CancelDeps {
  readonly children: ChildRunStore;
  readonly log: Logger;
}

/** What a join decides on: a `delegate.run` call's children, or a consensus round's. */
type Joining = (JoinState & { readonly kind: 'delegate' }) | (ConsensusJoinState & { readonly kind: 'consensus' });

function decideJoining(state: Joining | null): Decision {
  if (!state) return { kind: 'events', events: [] };
  return state.kind === 'consensus' ? decideConsensusJoin(state, WORKER) : decideJoin(state, WORKER);
}

/** The worker's principal inside a run's own tenant, for the reads a join makes. */
function systemPrincipal(tenantId: string, principalId: string): Principal {
  return { tenantId, principalId, roles: new Set(['system']), scopes: new Set() };
}

/**
 * What happens to child runs outside their own run loops (plan §27.6, ADR 0037): the join, which
 * re-queues a parent once every child is terminal (exactly once: the run decider refuses a parent no
 * longer waiting, and the append is conditional on the session sequence read before the state), and
 * the cancellation of a parent's active children.
 */
export class ChildRunService {
  constructor(private readonly deps: ChildRunDeps) {}

  /** Tries the parent's join: `joined`, `waiting` (a child is still active) or `nothing` (not waiting). */
  async join(parentRunId: string): Promise<'joined' | 'waiting' | 'nothing'> {
    return handleCommand<Joining | null, 'joined' | 'waiting' | 'nothing'>(this.deps.store, {
      load: () => this.loadJoin(parentRunId),
      decide: (state) => decideJoining(state),
      result: ({ state }, appended) => {
        if (appended.length > 0) return 'joined';
        return state?.parent.status === 'waiting_for_children' ? 'waiting' : 'nothing';
      },
      exhausted: () => new ConcurrencyConflict(`run ${parentRunId} kept changing during its join`, { parentRunId }),
    });
  }

  private async loadJoin(parentRunId: string): Promise<LoadedState<Joining | null>> {
    const { runs, sessions, children, records } = this.deps;
    const located = await runs.get(parentRunId, null);
    if (!located) return { sessionId: '', tenantId: '', state: null };
    const principal = systemPrincipal(located.tenantId, located.principalId);
    // The sequence is read before the state it guards (handleCommand).
    const session = await sessions.get(located.sessionId, principal);
    const parent = await runs.get(parentRunId, null);
    if (!session || !parent || parent.status !== 'waiting_for_children')
      return { sessionId: located.sessionId, tenantId: located.tenantId, state: null };
    const all = await children.childrenOf(parentRunId, null);
    // The parent's latest delegate.run call: its children were created last.
    const invocationId = all.at(-1)?.invocationId ?? '';
    const inv = invocationId ? await records.invocation(invocationId, parent.tenantId) : null;
    const round = all.filter((c) => c.invocationId === invocationId);
    const loaded = { sessionId: parent.sessionId, tenantId: parent.tenantId, expectedSequence: session.lastSequence };
    // A round of consensus mode (ADR 0047) has no tool invocation: its id is the round's, on the parent's events.
    if (!inv && invocationId) {
      const events = await this.deps.store.listRunEvents(parentRunId, principal);
      const consensus = foldState(consensusDecider, events);
      if (consensus.rounds.some((r) => r.roundId === invocationId))
        return {
          ...loaded,
          state: { kind: 'consensus', parent: runStateOf(parent), roundId: invocationId, consensus, children: round },
        };
    }
    return {
      ...loaded,
      state: {
        kind: 'delegate',
        parent: runStateOf(parent),
        invocationId,
        invocation: inv
          ? toolInvocationStateOf(inv.id, inv.status as ToolInvocationStatus)
          : { invocationId, status: 'running' },
        children: round,
      },
    };
  }

  /** Cancels every active child of the parent (its principal's cancel, each in the child's session). */
  async cancelChildren(parentRunId: string, principal: Principal): Promise<number> {
    const active = (await this.deps.children.childrenOf(parentRunId, principal.tenantId)).filter(
      (c) => !isTerminal(c.status),
    );
    for (const c of active) await cancelRun(this.deps, principal, c.runId, 'the parent run was cancelled');
    return active.length;
  }

  /**
   * The safety net behind the NOTIFYs (a listener that was down): joins every parent whose children
   * are all terminal, and cancels active children of parents that ended.
   */
  async sweep(limit = 50): Promise<void> {
    const { children, runs, log } = this.deps;
    for (const id of await children.joinableParents(limit)) await this.join(id);
    for (const orphan of await children.orphanedChildren(limit)) {
      const run = await runs.get(orphan.runId, null);
      if (!run) continue;
      log.warn('cancelling a child run whose parent ended', { runId: run.id, parentRunId: run.parentRunId });
      await cancelRun(this.deps, systemPrincipal(run.tenantId, run.principalId), run.id, 'the parent run ended');
    }
  }
}
