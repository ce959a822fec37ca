import { ConflictError } from '../errors';
import type { EventPayloads, NewEvent } from '../events/payloads';
import type { RunStatus } from '../run/status';
import { accept, event, refuse, type Actor, type DecidedEvent, type Decider, type Decision } from './decider';

/**
 * A consensus run's rounds, proposals and synthesis (issue 32 item 5, ADR 0047), folded from the
 * parent run's `consensus.*` events. The run loop starts rounds; the join records how each of the
 * round's child runs ended.
 */
export type ConsensusRole = 'engine' | 'synthesizer';
export type ConsensusSample = EventPayloads['consensus.round_started']['samples'][number];

export interface ConsensusRound {
  readonly roundId: string;
  readonly round: number;
  readonly role: ConsensusRole;
  readonly question: string;
  readonly samples: readonly ConsensusSample[];
  /** How many of its samples have an outcome (a proposal, a failure or the synthesis). */
  readonly outcomes: number;
}

export type ConsensusProposal = EventPayloads['consensus.proposal_received'];
export type ConsensusFailure = EventPayloads['consensus.proposal_failed'];
export type ConsensusSynthesis = EventPayloads['consensus.synthesized'];

export interface ConsensusState {
  readonly rounds: readonly ConsensusRound[];
  readonly proposals: readonly ConsensusProposal[];
  readonly failures: readonly ConsensusFailure[];
  readonly synthesis: ConsensusSynthesis | null;
}

export interface StartConsensusRound {
  readonly kind: 'StartConsensusRound';
  readonly runId: string;
  readonly actor: Actor;
  readonly roundId: string;
  readonly role: ConsensusRole;
  readonly question: string;
  readonly quorum: number;
  readonly samples: readonly ConsensusSample[];
}

/** How one sample's child run ended, as the join read it. */
export interface SampleOutcome {
  readonly runId: string;
  readonly status: RunStatus;
  readonly finalText: string | null;
  readonly error: string | null;
}

export interface RecordConsensusRound {
  readonly kind: 'RecordConsensusRound';
  readonly runId: string;
  readonly actor: Actor;
  readonly roundId: string;
  readonly outcomes: readonly SampleOutcome[];
}

export type ConsensusCommand = StartConsensusRound | RecordConsensusRound;

/** What the synthesizer receives of one proposal: a concise answer, never a transcript. */
export const MAX_PROPOSAL_CHARS = 4000;

function isEnded(r: ConsensusRound): boolean {
  return r.outcomes >= r.samples.length;
}

function evolve(state: ConsensusState, e: DecidedEvent): ConsensusState {
  const counted = (roundId: string) =>
    state.rounds.map((r) => (r.roundId === roundId ? { ...r, outcomes: r.outcomes + 1 } : r));
  switch (e.type) {
    case 'consensus.round_started': {
      const { roundId, round, role, question, samples } = e.data;
      return { ...state, rounds: [...state.rounds, { roundId, round, role, question, samples, outcomes: 0 }] };
    }
    case 'consensus.proposal_received':
      return { ...state, rounds: counted(e.data.roundId), proposals: [...state.proposals, e.data] };
    case 'consensus.proposal_failed':
      return { ...state, rounds: counted(e.data.roundId), failures: [...state.failures, e.data] };
    case 'consensus.synthesized':
      return { ...state, rounds: counted(e.data.roundId), synthesis: e.data };
    default:
      return state;
  }
}

function startRound(cmd: StartConsensusRound, state: ConsensusState): Decision {
  if (state.synthesis !== null)
    return refuse(new ConflictError(`run ${cmd.runId} has synthesized its consensus already`, { runId: cmd.runId }));
  const open = state.rounds.find((r) => !isEnded(r));
  if (open)
    return refuse(
      new ConflictError(`consensus round ${open.round} of run ${cmd.runId} has not ended`, { runId: cmd.runId }),
    );
  const header = { runId: cmd.runId, ...cmd.actor };
  return accept(
    event(
      'consensus.round_started',
      {
        roundId: cmd.roundId,
        round: state.rounds.length + 1,
        role: cmd.role,
        question: cmd.question,
        quorum: cmd.quorum,
        samples: [...cmd.samples],
      },
      header,
    ),
  );
}

/**
 * A round's outcomes, in slot order: each completed engine's answer is a proposal; the completed
 * synthesizer's is the synthesis; any other end is a failure that names the engine. Recording a
 * round twice (a second joiner) decides nothing.
 */
function recordRound(cmd: RecordConsensusRound, state: ConsensusState): Decision {
  const round = state.rounds.find((r) => r.roundId === cmd.roundId);
  if (!round || round.outcomes > 0) return accept();
  const header = { runId: cmd.runId, ...cmd.actor };
  const events: NewEvent[] = [];
  for (const s of [...round.samples].sort((a, b) => a.slot - b.slot)) {
    const o = cmd.outcomes.find((x) => x.runId === s.runId);
    const text = o?.status === 'completed' && o.finalText?.trim() ? clip(o.finalText) : null;
    if (text !== null && round.role === 'engine') {
      const { slot, engine, attempt, runId, sessionId } = s;
      events.push(
        event(
          'consensus.proposal_received',
          { roundId: round.roundId, slot, engine, attempt, runId, sessionId, text },
          header,
        ),
      );
    } else if (text !== null) {
      const proposals = state.proposals.map((p) => p.runId);
      const data = {
        roundId: round.roundId,
        runId: s.runId,
        sessionId: s.sessionId,
        synthesizer: s.engine,
        text,
        proposals,
      };
      events.push(event('consensus.synthesized', data, header));
    } else {
      const status = (o?.status ?? 'failed') as ConsensusFailure['status'];
      const error = o?.error ?? (o?.status === 'completed' ? 'the run answered with no text' : 'the run did not end');
      const { slot, engine, attempt, runId } = s;
      events.push(
        event(
          'consensus.proposal_failed',
          { roundId: round.roundId, role: round.role, slot, engine, attempt, runId, status, error },
          header,
        ),
      );
    }
  }
  return accept(...events);
}

function clip(text: string): string {
  return text.length > MAX_PROPOSAL_CHARS ? `${text.slice(0, MAX_PROPOSAL_CHARS)}…` : text;
}

export const consensusDecider: Decider<ConsensusCommand, ConsensusState> = {
  initialState: () => ({ rounds: [], proposals: [], failures: [], synthesis: null }),
  evolve,
  decide(cmd, state) {
    return cmd.kind === 'StartConsensusRound' ? startRound(cmd, state) : recordRound(cmd, state);
  },
};

/** Whether every round started has all its outcomes. */
export function roundsEnded(state: ConsensusState): boolean {
  return state.rounds.every(isEnded);
}
