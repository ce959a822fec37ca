import type { ToolCallItem } from '../../domain/conversation/items';
import { toolCallBudget } from '../../domain/run/budgets';
import { loopDetected } from '../../domain/run/loop-detection';
import type { PendingCalls } from '../../domain/run/next-step';
import { CANCEL_REQUESTED } from '../../domain/run/outcome';
import type { ToolCallContext } from '../tool-pipeline';
import { delegationSettingsOf } from '../../domain/delegation/brief';
import type { ChildAgent } from '../../domain/delegation/plan';
import type { DelegationContext } from './tool/types';
import { checkpointState } from './model-response';
import { ended, observed, STOPPED, type LeaseContext, type PreparedRun, type StepReport } from './run-context';

/** The step's tool budget as the calls of this step use it (shared by parallel calls). */
interface Budget {
  used: number;
}

/**
 * The `run_tools` step (plan §8.3): every call of the model response goes through the tool
 * pipeline, in parallel when all are parallel-safe reads, else one at a time. When all are done the
 * step's `tools_completed` checkpoint goes to the journal, which holds it for the next model call's
 * start. Reports that, a suspension, or what ended the step.
 */
export async function runTools(
  ctx: LeaseContext,
  prep: PreparedRun,
  step: number,
  pending: PendingCalls,
): Promise<StepReport> {
  const calls = callsOf(pending);
  const tc: ToolCallContext = {
    runId: ctx.claim.runId,
    sessionId: ctx.claim.sessionId,
    step,
    agent: prep.agent,
    principal: prep.principal,
    signal: ctx.signal,
    deadlineAt: prep.run.deadlineAt,
    allowedTools: prep.run.delegation ? new Set(prep.run.delegation.tools) : null,
    ...(prep.delegates ? { delegation: delegationContext(ctx, prep) } : {}),
    interrupted: () => ctx.journal.interruptRequested(),
  };
  // The run row as the model response's append left it.
  const budget: Budget = { used: ctx.journal.scope.run.toolCallCount };
  const report = parallelSafe(ctx, calls)
    ? (await Promise.all(calls.map((c) => runCall(ctx, prep, tc, budget, c, false)))).find((r) => r !== null)
    : await sequentially(ctx, prep, tc, budget, calls);
  if (report) return report;
  // The tool loop goes on: keep the provider's opaque reasoning for the next request (§10.6).
  const continuation = ctx.journal.checkpoint?.state.providerContinuation ?? null;
  ctx.journal.holdStepCheckpoint(checkpointState(step, 'tools_completed', prep.firstSequence, undefined, continuation));
  return observed({ kind: 'tools_completed' });
}

async function sequentially(
  ctx: LeaseContext,
  prep: PreparedRun,
  tc: ToolCallContext,
  budget: Budget,
  calls: readonly ToolCallItem[],
): Promise<StepReport | null> {
  for (const [i, call] of calls.entries()) {
    // What the previous call queued is committed before this one reads the tool records (the
    // first call's lookup depends on nothing queued: at most the model response is).
    if (i > 0) await ctx.journal.beforeRead();
    const r = await runCall(ctx, prep, tc, budget, call, i === calls.length - 1);
    if (r) return r;
  }
  return null;
}

/** One call through the pipeline; null when it is done and the step goes on. */
async function runCall(
  ctx: LeaseContext,
  prep: PreparedRun,
  tc: ToolCallContext,
  budget: Budget,
  call: ToolCallItem,
  last: boolean,
): Promise<StepReport | null> {
  const { journal, pipeline, signal } = ctx;
  const lease = journal.scope;
  // A call already proposed before a suspension or crash is not counted against the budget again.
  // Before the lease's first tool event, a run the claim found without invocations has none.
  const { existing, sameCall } = lease.mayHaveToolInvocations
    ? await pipeline.lookupCall(call, tc)
    : { existing: null, sameCall: [] };
  if (!existing) {
    if (signal.aborted) return STOPPED;
    const exhausted = toolCallBudget(budget.used, prep.run.limits);
    if (exhausted) return ended(exhausted);
    budget.used += 1;
  } else if (signal.aborted) return STOPPED;
  const r = await pipeline.process(call, tc, (events) => journal.commit(events), {
    existing,
    sameCall,
    defer: (events) => journal.queue(events),
    // The last call's result may wait for the step's checkpoint, which the journal writes next.
    deferResult: last,
    // A tool with an effect starts only if no cancel was requested since the lease's last write
    // (the model response's, or the previous tool's) (plan §2.5).
    start: (events) => journal.startTool(events, signal),
  });
  if (r.kind === 'suspend') return observed({ kind: 'needs_human', suspension: r });
  if (r.kind === 'stopped') return STOPPED;
  if (r.kind === 'cancelled') return ended(CANCEL_REQUESTED);
  if (r.kind === 'loop_detected') return ended(loopDetected(r.toolName));
  return signal.aborted ? STOPPED : null;
}

/** What `delegate.run` plans from: the run row as the lease's last write left it (its usage so far). */
function delegationContext(ctx: LeaseContext, prep: PreparedRun): DelegationContext {
  const { agents, deps } = ctx;
  return {
    parent: {
      run: ctx.journal.scope.run,
      pinnedTools: prep.tools.map((t) => t.name),
      scopes: [...prep.principal.scopes],
    },
    maxFanOut: delegationSettingsOf(prep.agent).maxFanOut,
    async agents(ids) {
      const found = new Map<string, ChildAgent>();
      for (const id of ids) {
        const a = id === prep.agent.id ? prep.agent : await agents.current(id);
        if (a)
          found.set(id, {
            id: a.id,
            version: a.version,
            modelPolicy: id === prep.agent.id ? prep.run.modelPolicy : a.modelPolicy,
          });
      }
      return found;
    },
    ...(deps.delegation?.admits ? { admits: deps.delegation.admits } : {}),
  };
}

/** Malformed calls become proposed calls whose arguments failed to parse; the model is told so. */
function callsOf(pending: PendingCalls): ToolCallItem[] {
  return [
    ...pending.calls,
    ...pending.malformed.map((m) => ({
      kind: 'tool_call' as const,
      callId: m.callId,
      name: m.name,
      arguments: { _unparsed_arguments: m.raw.slice(0, 2000) },
    })),
  ];
}

function parallelSafe(ctx: LeaseContext, calls: readonly ToolCallItem[]): boolean {
  return (
    calls.length > 1 &&
    calls.every((c) => {
      const spec = ctx.deps.registry.get(c.name)?.spec;
      return spec !== undefined && spec.allowParallel && spec.idempotency === 'read_only';
    })
  );
}
