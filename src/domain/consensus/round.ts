import type { ConsensusRole, ConsensusState } from '../deciders/consensus';
import type { Brief } from '../delegation/brief';
import { carveLimits } from '../delegation/carve';
import type { ChildIds, ChildPlan, DelegatingParent } from '../delegation/plan';
import { engineMessage, synthesisMessage, type PlannedSample } from './progress';

export interface ConsensusRoundInput {
  readonly parent: DelegatingParent;
  readonly role: ConsensusRole;
  readonly question: string;
  readonly samples: readonly PlannedSample[];
  /** How many engines the agent has (for the engines' framing). */
  readonly engines: number;
  readonly state: ConsensusState;
  readonly nowMs: number;
  /** One set of fresh ids per sample, in order. */
  readonly ids: readonly ChildIds[];
}

/**
 * One child run per sample of a consensus round (ADR 0047): the parent's agent on the sample's
 * model policy, no tools, the parent's scopes, limits carved from the parent's remainder as for
 * `delegate.run` (carve.ts), and the framed question (or, for the synthesizer, the proposals) as its
 * one message. Or why the round does not fit the parent's remaining budget. Pure.
 */
export function planConsensusRound(
  input: ConsensusRoundInput,
): { ok: true; children: ChildPlan[] } | { ok: false; message: string } {
  const { parent, samples } = input;
  const carved = carveLimits(
    samples.map(() => ({})),
    parent.run,
    input.nowMs,
  );
  if (!carved.ok) return { ok: false, message: `consensus cannot start its ${input.role} round: ${carved.message}` };
  const children = samples.map((sample, i): ChildPlan => {
    const text =
      input.role === 'engine'
        ? engineMessage(input.question, sample, input.engines)
        : synthesisMessage(input.question, input.state, sample.attempt);
    const label =
      input.role === 'engine'
        ? `consensus engine ${sample.slot + 1} (${sample.engine})`
        : `consensus synthesis (${sample.engine})`;
    const brief: Brief = {
      objective: `${label}: ${input.question}`,
      successCondition: 'A concise answer.',
      context: null,
      artifacts: [],
      tools: [],
      limits: {},
      agentId: null,
    };
    return {
      briefIndex: sample.slot,
      brief,
      ids: input.ids[i],
      agent: { id: parent.run.agentId, version: parent.run.agentVersion, modelPolicy: sample.engine },
      text,
      tools: [],
      scopes: [...parent.scopes],
      limits: carved.children[i].limits,
      deadlineAt: carved.children[i].deadlineAt,
    };
  });
  return { ok: true, children };
}
