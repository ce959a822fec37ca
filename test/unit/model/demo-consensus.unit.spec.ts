import { engineMessage, synthesisMessage } from '../../../src/domain/consensus/progress';
import { consensusDecider } from '../../../src/domain/deciders/consensus';
import { consensusReply } from '../../../src/adapters/model/demo/consensus-replies';

/** The demo model as a consensus engine and synthesizer (issue 32 demo phrasing, ADR 0047). */
describe('demo consensus replies', () => {
  it('proposes, as engine i, what it would compute, and says which sample it is', () => {
    expect(consensusReply(engineMessage('what is 17 times 23', { slot: 0, engine: 'demo', attempt: 1 }, 2))).toBe(
      'Engine 1 proposes: the answer is the value of 17 * 23.',
    );
    expect(
      consensusReply(engineMessage('what time is it in Asia/Tokyo', { slot: 1, engine: 'demo', attempt: 2 }, 2)),
    ).toBe('Engine 2 (sample 2) proposes: the answer is the current time in Asia/Tokyo, read from a clock.');
    expect(consensusReply(engineMessage('why is the sky blue?', { slot: 0, engine: 'demo', attempt: 1 }, 2))).toBe(
      'Engine 1 proposes: a direct, concise answer to "why is the sky blue?".',
    );
  });

  it('synthesizes by quoting every proposal and naming engines without one', () => {
    const w = { runId: 'r', actorType: 'worker' as const };
    const state = [
      {
        type: 'consensus.round_started' as const,
        data: {
          roundId: 'x',
          round: 1,
          role: 'engine' as const,
          question: 'q',
          quorum: 2,
          samples: [
            { slot: 0, engine: 'demo', attempt: 1, runId: 'a', sessionId: 'sa' },
            { slot: 1, engine: 'fake:broken', attempt: 1, runId: 'b', sessionId: 'sb' },
          ],
        },
        ...w,
      },
      {
        type: 'consensus.proposal_received' as const,
        data: { roundId: 'x', slot: 0, engine: 'demo', attempt: 1, runId: 'a', sessionId: 'sa', text: 'Four.' },
        ...w,
      },
      {
        type: 'consensus.proposal_failed' as const,
        data: {
          roundId: 'x',
          role: 'engine' as const,
          slot: 1,
          engine: 'fake:broken',
          attempt: 1,
          runId: 'b',
          status: 'failed' as const,
          error: 'no',
        },
        ...w,
      },
    ].reduce(consensusDecider.evolve, consensusDecider.initialState());
    expect(consensusReply(synthesisMessage('what is 2 plus 2', state, 1))).toBe(
      'Consensus of 1 proposal(s) on "what is 2 plus 2": engine 1 (demo) said "Four."; no proposal from engine 2 (fake:broken).',
    );
  });

  it('leaves every other message to the other rules', () => {
    expect(consensusReply('consensus: what is 2 plus 2')).toBeNull();
    expect(consensusReply('What is 17 multiplied by 23?')).toBeNull();
  });
});
