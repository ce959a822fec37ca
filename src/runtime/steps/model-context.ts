import { ContextBuildError, ContextOverflow } from '../../domain/errors';
import { failedWith } from '../../domain/run/outcome';
import type { RunRecord } from '../../domain/run/run';
import type { BuiltContext, ContextBuildInputs } from '../../context/engine';
import { ended, type LeaseContext, type PreparedRun, type StepReport } from './run-context';

/**
 * Builds the request of one model call attempt (plan §11): the context engine reads only what the
 * session log gained since its last build, and sees the events the journal has not committed yet
 * (the step's tool results and checkpoint, which this call's start commits). A request that cannot
 * fit, or a build that fails on the log's content, ends the run; anything else is a crash.
 */
export async function buildContext(
  ctx: LeaseContext,
  prep: PreparedRun,
  run: RunRecord,
  step: number,
  attemptId: string,
): Promise<BuiltContext | StepReport> {
  const { deps, claim, journal } = ctx;
  const uncommitted = journal.uncommitted();
  const inputs: ContextBuildInputs = {
    sessionId: claim.sessionId,
    agent: { ...prep.agent, modelPolicy: run.modelPolicy },
    principal: prep.principal,
    runId: claim.runId,
    userMessageId: run.userMessageId,
    step,
    tools: prep.tools,
    nowIso: deps.clock.nowIso(),
    attemptId,
    model: prep.models.active.model,
    newId: () => deps.ids.uuid(),
    skills: prep.skills,
    // The written (or queued) checkpoint's reference: a held step checkpoint gets this build's.
    resume: journal.scope.checkpoint?.state.context ?? null,
    knownSequence: journal.scope.appendedThrough ?? prep.claimedThrough,
    pending: uncommitted ?? undefined,
  };
  try {
    const built = await ctx.telemetry.contextBuild(step, () => ctx.engine.build(inputs));
    journal.noteContext(built.checkpoint);
    return built;
  } catch (e) {
    if (!(e instanceof ContextOverflow || e instanceof ContextBuildError)) throw e;
    const reason = e instanceof ContextOverflow ? 'context_overflow' : 'internal_error';
    return ended(failedWith(reason, e.message, e.code));
  }
}
