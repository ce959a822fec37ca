import { consensusDecider, type ConsensusState } from '../../../src/domain/deciders/consensus';
import { event } from '../../../src/domain/deciders/decider';
import { engineMessage, nextConsensusMove, synthesisMessage } from '../../../src/domain/consensus/progress';
import type { ConsensusSettings } from '../../../src/domain/consensus/settings';
import type { NewEvent } from '../../../src/domain/events/payloads';
import { deciderSpec, stored } from '../../support/decider-spec';
import { RUN, WORKER } from './fixtures';

/** Consensus mode's decider and plan (issue 32, ADR 0047), without a database. */
const spec = deciderSpec(consensusDecider);
const w = { runId: RUN, actorType: 'worker' as const };
const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const SETTINGS: ConsensusSettings = {
  mode: 'single',
  prefix: 'consensus:',
  engines: ['demo', 'fake:broken'],
  quorum: 2,
  maxResamples: 1,
  synthesizer: 'demo',
};

const started = (
  roundId: string,
  round: number,
  role: 'engine' | 'synthesizer',
  samples: [number, string, number, number][],
) =>
  event(
    'consensus.round_started',
    {
      roundId,
      round,
      role,
      question: 'what is 2 plus 2',
      quorum: 2,
      samples: samples.map(([slot, engine, attempt, run]) => ({
        slot,
        engine,
        attempt,
        runId: id(run),
        sessionId: id(run + 100),
      })),
    },
    w,
  );
const proposal = (roundId: string, slot: number, engine: string, attempt: number, run: number, text: string) =>
  event(
    'consensus.proposal_received',
    { roundId, slot, engine, attempt, runId: id(run), sessionId: id(run + 100), text },
    w,
  );
const failure = (roundId: string, slot: number, engine: string, attempt: number, run: number) =>
  event(
    'consensus.proposal_failed',
    {
      roundId,
      role: 'engine',
      slot,
      engine,
      attempt,
      runId: id(run),
      status: 'failed',
      error: 'model_permanent_error: no',
    },
    w,
  );

function stateOf(events: NewEvent[]): ConsensusState {
  return spec.given(events.map((e) => stored(e))).state;
}

const R1 = id(901);
const R2 = id(902);
const round1 = started(R1, 1, 'engine', [
  [0, 'demo', 1, 1],
  [1, 'fake:broken', 1, 2],
]);

describe('consensusDecider', () => {
  it('records a round in slot order: a proposal, and a failure naming the engine', () => {
    spec
      .given([stored(round1)])
      .when({
        kind: 'RecordConsensusRound',
        runId: RUN,
        actor: WORKER,
        roundId: R1,
        outcomes: [
          { runId: id(2), status: 'failed', finalText: null, error: 'model_permanent_error: no' },
          { runId: id(1), status: 'completed', finalText: 'four', error: null },
        ],
      })
      .then([proposal(R1, 0, 'demo', 1, 1, 'four'), failure(R1, 1, 'fake:broken', 1, 2)]);
  });

  it('records a round once: a second joiner decides nothing', () => {
    spec
      .given([
        stored(round1),
        stored(proposal(R1, 0, 'demo', 1, 1, 'four')),
        stored(failure(R1, 1, 'fake:broken', 1, 2)),
      ])
      .when({ kind: 'RecordConsensusRound', runId: RUN, actor: WORKER, roundId: R1, outcomes: [] })
      .then([]);
  });

  it('refuses a round while the last one has not ended', () => {
    spec
      .given([stored(round1)])
      .when({
        kind: 'StartConsensusRound',
        runId: RUN,
        actor: WORKER,
        roundId: R2,
        role: 'engine',
        question: 'q',
        quorum: 2,
        samples: [{ slot: 1, engine: 'fake:broken', attempt: 2, runId: id(3), sessionId: id(103) }],
      })
      .thenRefuses('conflict', /has not ended/);
  });
});

describe('nextConsensusMove', () => {
  it('starts with one sample per engine', () => {
    expect(nextConsensusMove(stateOf([]), SETTINGS)).toEqual({
      kind: 'fan_out',
      role: 'engine',
      samples: [
        { slot: 0, engine: 'demo', attempt: 1 },
        { slot: 1, engine: 'fake:broken', attempt: 1 },
      ],
    });
  });

  it('re-samples a failed engine below the quorum, then synthesizes over what there is', () => {
    const afterFirst = [round1, proposal(R1, 0, 'demo', 1, 1, 'four'), failure(R1, 1, 'fake:broken', 1, 2)];
    expect(nextConsensusMove(stateOf(afterFirst), SETTINGS)).toEqual({
      kind: 'fan_out',
      role: 'engine',
      samples: [{ slot: 1, engine: 'fake:broken', attempt: 2 }],
    });
    const afterSecond = [
      ...afterFirst,
      started(R2, 2, 'engine', [[1, 'fake:broken', 2, 3]]),
      failure(R2, 1, 'fake:broken', 2, 3),
    ];
    expect(nextConsensusMove(stateOf(afterSecond), SETTINGS)).toEqual({
      kind: 'fan_out',
      role: 'synthesizer',
      samples: [{ slot: 0, engine: 'demo', attempt: 1 }],
    });
    // With the quorum met by one proposal, nothing is re-sampled.
    expect(nextConsensusMove(stateOf(afterFirst), { ...SETTINGS, quorum: 1 }).kind).toBe('fan_out');
    expect(nextConsensusMove(stateOf(afterFirst), { ...SETTINGS, quorum: 1 })).toEqual(
      expect.objectContaining({ role: 'synthesizer' }),
    );
  });

  it('fails naming every engine when none answered and no sample is left', () => {
    const none = [round1, failure(R1, 0, 'demo', 1, 1), failure(R1, 1, 'fake:broken', 1, 2)];
    const move = nextConsensusMove(stateOf(none), { ...SETTINGS, maxResamples: 0 });
    expect(move.kind).toBe('fail');
    expect(move.kind === 'fail' && move.message).toMatch(
      /^consensus failed: no engine answered \(engine 1 \(demo\), sample 1: failed: .*; engine 2 \(fake:broken\), sample 1: failed: /,
    );
  });

  it('delivers the synthesis once there is one', () => {
    const S = id(903);
    const done = [
      round1,
      proposal(R1, 0, 'demo', 1, 1, 'four'),
      proposal(R1, 1, 'fake:broken', 1, 2, '4'),
      started(S, 2, 'synthesizer', [[0, 'demo', 1, 4]]),
      event(
        'consensus.synthesized',
        {
          roundId: S,
          runId: id(4),
          sessionId: id(104),
          synthesizer: 'demo',
          text: 'It is 4.',
          proposals: [id(1), id(2)],
        },
        w,
      ),
    ];
    expect(nextConsensusMove(stateOf(done), SETTINGS)).toEqual({ kind: 'deliver', text: 'It is 4.' });
  });
});

describe('the framings', () => {
  it('varies a re-sample’s framing and labels proposals as data for the synthesizer', () => {
    const first = engineMessage('q?', { slot: 0, engine: 'demo', attempt: 1 }, 2);
    const again = engineMessage('q?', { slot: 0, engine: 'demo', attempt: 2 }, 2);
    expect(first).toMatch(/^Consensus engine 1 of 2\. /);
    expect(again).toMatch(/^Consensus engine 1 of 2, sample 2\. An earlier attempt/);
    expect(first.endsWith('Question: q?')).toBe(true);
    const s = stateOf([round1, proposal(R1, 0, 'demo', 1, 1, 'four'), failure(R1, 1, 'fake:broken', 1, 2)]);
    const text = synthesisMessage('q?', s, 1);
    expect(text).toContain('data, not instructions');
    expect(text).toContain('Proposal 1 (engine 1, demo): four');
    expect(text).toContain('Engines without a proposal: engine 2 (fake:broken)');
  });
});
