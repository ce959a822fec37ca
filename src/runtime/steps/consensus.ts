import { consensusDecider, type ConsensusState } from '../../domain/deciders/consensus';
import { eventsOrThrow, foldState, WORKER } from '../../domain/deciders/decider';
import { nextConsensusMove } from '../../domain/consensus/progress';
import { planConsensusRound } from '../../domain/consensus/round';
import { consensusQuestion, consensusSettingsOf, type ConsensusRun } from '../../domain/consensus/settings';
import { childBatch } from '../../domain/delegation/materialize';
import type { AgentSpec } from '../../domain/agent';
import type { StoredEvent } from '../../domain/events/payloads';
import { ContextBuildError, CorruptEventError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { deadlineCheck } from '../../domain/run/budgets';
import type { FailureReason } from '../../domain/run/failure';
import { CANCEL_REQUESTED, failedWith, type RunOutcome } from '../../domain/run/outcome';
import type { RunRecord } from '../../domain/run/run';
import { activeTraceIds } from '../tracing';
import type { LeaseContext, PreparedRun } from './run-context';
import { suspend } from './suspend';

/**
 * Whether the run is answered by consensus (ADR 0047): a turn (never a child run) whose message
 * starts with the agent's prefix, or any turn of an agent in consensus mode. A consensus run never
 * calls a model itself (its engines and synthesizer are child runs), so a run with a step behind it
 * is an ordinary one and costs no read; the message is in the claim's session tail, else read.
 */
export async function consensusOf(
  ctx: LeaseContext,
  run: RunRecord,
  agent: AgentSpec,
  principal: Principal,
): Promise<ConsensusRun | null> {
  if (run.parentRunId !== null || run.stepCount > 0) return null;
  const settings = consensusSettingsOf(agent, run.modelPolicy);
  if (settings.prefix === null && settings.mode !== 'consensus') return null;
  const own = (events: readonly StoredEvent[]) =>
    events.find((e) => e.type === 'user.message.created' && e.runId === run.id) as
      StoredEvent<'user.message.created'> | undefined;
  const message = own(ctx.claim.preloaded?.sessionTail ?? []) ?? own(await runEventsForContext(ctx, run.id, principal));
  if (!message) return null;
  const text = message.data.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
  const question = consensusQuestion(text, settings);
  return question === null ? null : { settings, question };
}

/**
 * The consensus step, one more step kind on the child-run machinery (ADR 0047): reads the run's
 * rounds, and either fans the next round out as child runs without tools — the engines, failed
 * engines again with a varied framing, or the synthesizer over the proposals — suspending the run
 * until the round's join (suspend.ts, the same transaction as the children), or ends the run with
 * the synthesis as the agent's one answer, or with a failure naming the engines.
 */
export async function consensusStep(
  ctx: LeaseContext,
  prep: PreparedRun,
  c: ConsensusRun,
): Promise<RunOutcome | 'stopped' | 'suspended'> {
  const { deps, claim } = ctx;
  if (ctx.signal.aborted) return 'stopped';
  const run = ctx.journal.scope.run;
  if (run.cancelRequestedAt || ctx.journal.interruptRequested()) return CANCEL_REQUESTED;
  const late = deadlineCheck(run.deadlineAt, deps.clock.nowMs());
  if (late) return late;
  await ctx.journal.beforeRead();
  const state = foldState(consensusDecider, await deps.store.listRunEvents(claim.runId, prep.principal));
  const move = nextConsensusMove(state, c.settings);
  if (move.kind === 'deliver') return { kind: 'completed', text: move.text };
  if (move.kind === 'fail') return failedWith('model_permanent_error', move.message, 'consensus_failed');
  const ids = move.samples.map(() => ({
    sessionId: deps.ids.uuid(),
    runId: deps.ids.uuid(),
    messageId: deps.ids.uuid(),
  }));
  const plan = planConsensusRound({
    parent: { run, pinnedTools: [], scopes: [...prep.principal.scopes] },
    role: move.role,
    question: c.question,
    samples: move.samples,
    engines: c.settings.engines.length,
    state,
    nowMs: deps.clock.nowMs(),
    ids,
  });
  if (!plan.ok) return failedWith(budgetReason(plan.message), plan.message, 'budget_exceeded');
  const refused = deps.delegation?.admits ? await deps.delegation.admits(run.tenantId, plan.children.length) : null;
  if (refused) return failedWith('model_permanent_error', `consensus cannot start: ${refused}`, 'tenant_admission');
  const roundId = deps.ids.uuid();
  return suspend(ctx, run.stepCount, {
    kind: 'suspend',
    before: roundStarted(state, run.id, roundId, move, c, ids),
    awaiting: {
      kind: 'children',
      invocationId: roundId,
      // Each child's trace links to the parent's span, as for delegate.run.
      children: plan.children.map((p) => childBatch(p, run, roundId, activeTraceIds())),
    },
  });
}

function roundStarted(
  state: ConsensusState,
  runId: string,
  roundId: string,
  move: Extract<ReturnType<typeof nextConsensusMove>, { kind: 'fan_out' }>,
  c: ConsensusRun,
  ids: readonly { sessionId: string; runId: string }[],
) {
  const samples = move.samples.map((s, i) => ({ ...s, runId: ids[i].runId, sessionId: ids[i].sessionId }));
  const command = {
    kind: 'StartConsensusRound' as const,
    runId,
    actor: WORKER,
    roundId,
    role: move.role,
    question: c.question,
    quorum: c.settings.quorum,
    samples,
  };
  return [...eventsOrThrow(consensusDecider.decide(command, state))];
}

/** The failure reason for a round that does not fit the parent's remaining budget (carve.ts says which). */
function budgetReason(message: string): FailureReason {
  if (message.includes('model calls')) return 'max_model_calls_exceeded';
  if (message.includes('tokens')) return 'token_budget_exceeded';
  if (message.includes('cost')) return 'cost_budget_exceeded';
  if (message.includes('deadline')) return 'deadline_exceeded';
  return 'max_steps_exceeded';
}

/**
 * The run's events, read to find its message before the context build would: an event this build
 * cannot read fails the run the way the context build does (`context build failed: …`, naming it).
 */
async function runEventsForContext(ctx: LeaseContext, runId: string, principal: Principal): Promise<StoredEvent[]> {
  try {
    return await ctx.deps.store.listRunEvents(runId, principal);
  } catch (e) {
    if (e instanceof CorruptEventError)
      throw new ContextBuildError(`context build failed: ${e.message}`, e.details, { cause: e });
    throw e;
  }
}
