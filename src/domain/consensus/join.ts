import { combine, accept, type Actor, type Decision } from '../deciders/decider';
import { consensusDecider, type ConsensusState } from '../deciders/consensus';
import { runDecider, type RunState } from '../deciders/run';
import type { ChildOutcome } from '../delegation/join';
import { isTerminal } from '../run/status';

/** The parent of a consensus round waiting for the round's child runs. */
export interface ConsensusJoinState {
  readonly parent: RunState;
  readonly roundId: string;
  readonly consensus: ConsensusState;
  readonly children: readonly ChildOutcome[];
}

/**
 * A consensus round's join (ADR 0047), the counterpart of `decideJoin` for `delegate.run`: once
 * every child of the round is terminal, each one's outcome (a proposal, the synthesis, or a failure
 * naming the engine), the children's usage joining the parent's, and the parent re-queued — once:
 * before that, or for a parent no longer waiting, it decides nothing.
 */
export function decideConsensusJoin(state: ConsensusJoinState, actor: Actor): Decision {
  if (state.parent.status !== 'waiting_for_children') return accept();
  if (state.children.length === 0 || state.children.some((c) => !isTerminal(c.status))) return accept();
  const runId = state.parent.runId!;
  const children = [...state.children].sort((a, b) => a.briefIndex - b.briefIndex);
  return combine(
    consensusDecider.decide(
      {
        kind: 'RecordConsensusRound',
        runId,
        actor,
        roundId: state.roundId,
        outcomes: children.map((c) => ({
          runId: c.runId,
          status: c.status,
          finalText: c.finalText,
          error:
            c.status === 'completed'
              ? null
              : c.failure
                ? `${c.failure.errorCode ?? c.failure.reason}: ${c.failure.message}`
                : `the run ended ${c.status}`,
        })),
      },
      state.consensus,
    ),
    runDecider.decide(
      {
        kind: 'JoinChildren',
        runId,
        actor,
        invocationId: state.roundId,
        children: children.map((c) => ({
          runId: c.runId,
          status: c.status as 'completed' | 'failed' | 'cancelled' | 'interrupted',
          usage: c.usage,
        })),
      },
      state.parent,
    ),
  );
}
