import { modelCallDecider } from '../../domain/deciders/model-call';
import { modelCallBudget } from '../../domain/run/budgets';
import type { ModelTurn } from '../../domain/model/model-events';
import { buildContext } from './model-context';
import { invokeModel, startModelCall, type Attempt } from './model-attempt';
import { afterModelError } from './model-failure';
import { recordResponse } from './model-response';
import { CANCEL_REQUESTED } from '../../domain/run/outcome';
import { ended, type LeaseContext, type PreparedRun, type StepReport } from './run-context';

/**
 * The `call_model` step (plan §12): build the context, start the call, stream it, record the
 * response; a failed attempt is recorded and retried within the model call budget and the retry
 * policy, or continued on the policy's next fallback model (ADR 0046). Reports the response, or what
 * ended the step.
 */
export async function callModel(ctx: LeaseContext, prep: PreparedRun, step: number): Promise<StepReport> {
  // As the last write left it; earlier attempts of this step are not in it yet.
  const run = ctx.journal.scope.run;
  // Attempts on the active model: a fallback (ADR 0046) gets its own retry budget; `attempt` keeps
  // counting within the step, so the run's model call budget counts every call.
  let onModel = 0;
  for (let attempt = 1; ; attempt++) {
    onModel++;
    // A newer message asked the run to stop (issue 33): the safe point is before the next call.
    if (ctx.journal.interruptRequested()) return ended(CANCEL_REQUESTED);
    const budget = modelCallBudget(run.modelCallCount, attempt, run.limits);
    if (budget) return ended(budget);
    const attemptId = ctx.deps.ids.uuid();
    const built = await buildContext(ctx, prep, run, step, attemptId);
    if ('observation' in built) return built;
    const call = modelCallDecider.initialState();
    const a: Attempt = { step, attempt, attemptId, modelCallId: ctx.deps.ids.uuid(), run, call };
    const notStarted = await startModelCall(ctx, prep, a, built);
    if (notStarted) return notStarted;
    const t0 = ctx.deps.clock.nowMs();
    let turn: ModelTurn;
    try {
      turn = await invokeModel(ctx, prep, a, built);
    } catch (e) {
      const before = prep.models.active;
      const failed = await afterModelError(ctx, prep.models, a, e, ctx.deps.clock.nowMs() - t0, onModel);
      if (failed) return failed;
      if (prep.models.active !== before) onModel = 0;
      continue;
    }
    return recordResponse(ctx, prep, a, turn, ctx.deps.clock.nowMs() - t0);
  }
}
