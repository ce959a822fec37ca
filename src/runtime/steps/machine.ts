import { nextStep } from '../../domain/run/next-step';
import type { RunOutcome } from '../../domain/run/outcome';
import { callModel } from './call-model';
import { consensusStep } from './consensus';
import { prepare } from './prepare';
import { observed, type LeaseContext, type StepReport } from './run-context';
import { runTools } from './run-tools';
import { suspend } from './suspend';

/**
 * Drives one lease through its steps (docs/adr/0025-run-loop-steps.md): `nextStep` (pure, in the
 * domain) decides what happens next from what the last step reported; each step's executor does
 * the I/O and hands its events to the journal. Ends with the run's outcome (for the finish step),
 * `suspended` (the run waits for a human, its lease released) or `stopped`.
 */
export async function drive(ctx: LeaseContext): Promise<RunOutcome | 'stopped' | 'suspended'> {
  const start = await prepare(ctx);
  if (start.kind === 'stopped') return 'stopped';
  if (start.kind === 'ended') return start.outcome;
  const { prepared } = start;
  // A turn answered by consensus (ADR 0047): its rounds are child runs; it never calls a model itself.
  if (prepared.consensus) return consensusStep(ctx, prepared, prepared.consensus);
  let step = start.step;
  let report: StepReport = observed(start.first);
  for (;;) {
    const next = nextStep({
      step,
      last: report.observation,
      stopping: ctx.signal.aborted,
      nowMs: ctx.deps.clock.nowMs(),
      // As the last write left it, unless the step says which row its outcome is judged on.
      run: report.run ?? ctx.journal.scope.run,
    });
    switch (next.kind) {
      case 'call_model':
        step = next.step;
        report = await callModel(ctx, prepared, step);
        break;
      case 'run_tools':
        report = await runTools(ctx, prepared, next.step, next.pending);
        break;
      case 'suspend':
        return suspend(ctx, next.step, next.suspension);
      case 'finish':
        return next.outcome;
      case 'stop':
        return 'stopped';
    }
  }
}
