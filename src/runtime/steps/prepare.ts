import { enabledToolNames, mcpGrantsOf, type AgentSpec } from '../../domain/agent';
import { DELEGATE_TOOL, delegationEnabled, NEVER_DELEGATED } from '../../domain/delegation/brief';
import { resumePoint, type Observation } from '../../domain/run/next-step';
import { failedWith, type RunOutcome } from '../../domain/run/outcome';
import type { RunRecord } from '../../domain/run/run';
import { isTerminal } from '../../domain/run/status';
import type { Principal } from '../../domain/principal';
import type { ToolSpec } from '../../domain/tools/tool-spec';
import { skillEnabled } from '../../tools/skills/skill-load';
import { LeaseScope, type KnownCheckpoint } from '../lease-scope';
import { ModelChain, type StartedCall } from '../model-chain';
import { consensusOf } from './consensus';
import type { LeaseContext, PreparedRun } from './run-context';

/** A lease ready to step: what it found, the step it resumes at and what the resume point is. */
export interface Prepared {
  readonly kind: 'ready';
  readonly prepared: PreparedRun;
  readonly step: number;
  readonly first: Observation<never>;
}

/**
 * The first step of every lease: the run row, agent version, model route and tools (from what the
 * claim read under its lock when it did), then the lease scope and the resume point. Ends the
 * attempt when the run is gone or terminal (`stopped`) or cannot run at all (`ended`).
 */
export async function prepare(
  ctx: LeaseContext,
): Promise<Prepared | { kind: 'stopped' } | { kind: 'ended'; outcome: RunOutcome }> {
  const { deps, claim } = ctx;
  const preloaded = claim.preloaded;
  const run = preloaded ? preloaded.run : await deps.runs.get(claim.runId, null);
  if (run) ctx.journal.noteRun(run);
  if (!run || isTerminal(run.status)) return { kind: 'stopped' };
  const agent = await ctx.agents.get(run.agentId, run.agentVersion, preloaded?.operatorGrants);
  if (!agent) {
    const message = `agent ${run.agentId} v${run.agentVersion} is not defined`;
    return { kind: 'ended', outcome: failedWith('internal_error', message, 'not_found') };
  }
  ctx.telemetry.annotateRun({ id: agent.id, version: agent.version });
  const principal = childPrincipal(deps.principalFor(run), run);
  let route;
  try {
    route = deps.router.resolve(run.modelPolicy);
  } catch (e) {
    return { kind: 'ended', outcome: failedWith('model_permanent_error', (e as Error).message, 'configuration_error') };
  }
  const models = new ModelChain(route, (ref) => deps.router.resolve(ref));
  // A run that moved to a fallback in an earlier lease continues on it (read only when there are fallbacks).
  if (route.fallbacks?.length) models.resume(await startedCalls(ctx, principal));
  const cp = preloaded ? preloaded.checkpoint : await deps.checkpoints.latest(claim.runId);
  const claimedThrough = openLease(ctx, run, principal, cp);
  const { step, pending } = resumePoint(run.stepCount, cp?.state ?? null);
  // Where this run's conversation starts in the session log: kept by every checkpoint, else the
  // run's first event (read by the claim, or here once per lease).
  const firstSequence =
    cp?.state.conversationRange.fromSequence ?? preloaded?.firstSequence ?? (await firstSequenceOfRun(ctx, principal));
  // The skill catalog is fixed for the process (read at startup), so it is the same for every run of a session.
  const skills = deps.skills ? deps.skills.list().filter((sk) => skillEnabled(agent, sk.name)) : undefined;
  const delegates = run.parentRunId === null && delegationOffered(ctx, agent);
  const tools = toolsFor(ctx, agent, principal, run, delegates);
  const consensus = await consensusOf(ctx, run, agent, principal);
  const prepared = {
    run,
    agent,
    principal,
    models,
    tools,
    skills,
    firstSequence,
    claimedThrough,
    delegates,
    consensus,
  };
  return { kind: 'ready', prepared, step, first: { kind: 'resumed', pending } };
}

/**
 * Begins the lease scope on the run row and checkpoint the claim read (lease-scope.ts), feeding the
 * claim's session tail to the context engine; returns the session's last sequence the claim saw.
 */
function openLease(ctx: LeaseContext, run: RunRecord, principal: Principal, cp: KnownCheckpoint | null): number | null {
  const { deps, claim, engine } = ctx;
  // The session's latest events, read by the claim: the first build need not read the log when
  // they continue (or, for a new session, start) the context engine's fold.
  const tail = claim.preloaded?.sessionTail ?? [];
  engine.noteRead(claim.sessionId, tail);
  const claimedThrough = tail.length > 0 ? tail[tail.length - 1].sequence : null;
  const lease = new LeaseScope(
    deps.journal,
    claim,
    run,
    cp ? { version: cp.version, state: cp.state } : null,
    claim.preloaded?.hasToolInvocations ?? true,
    claimedThrough,
    // The run's own events continue the context engine's fold, so the next step's build need not
    // read back what this lease just wrote (one round trip per step; ADR 0013).
    (events) => engine.noteAppended(claim.sessionId, events),
  );
  ctx.journal.begin(lease, principal);
  return claimedThrough;
}

/** Whether `delegate.run` is registered and the agent may use it (its own `delegation.enabled`, else the process's). */
function delegationOffered(ctx: LeaseContext, agent: AgentSpec): boolean {
  return (
    ctx.deps.registry.get(DELEGATE_TOOL) !== undefined &&
    delegationEnabled(agent, ctx.deps.delegation?.enabled ?? false)
  );
}

/**
 * A child run's principal has the scopes `run.delegated` recorded (a subset of its parent's) and no
 * others. The child's own `run.queued` already records its parent's set (ADR 0032); this narrowing
 * keeps a child within its brief's record even for a run recorded before that.
 */
function childPrincipal(principal: Principal, run: RunRecord): Principal {
  if (!run.delegation) return principal;
  const allowed = new Set(run.delegation.scopes);
  return { ...principal, scopes: new Set([...principal.scopes].filter((s) => allowed.has(s))) };
}

/**
 * The run's tools: the agent's enabled tools the principal's scopes allow, plus `delegate.run` when
 * offered; for a child run, only those its brief named (never `delegate.run` or `skill.manage`).
 */
function toolsFor(
  ctx: LeaseContext,
  agent: AgentSpec,
  principal: Principal,
  run: RunRecord,
  delegates: boolean,
): readonly ToolSpec[] {
  const { registry, sessionTools } = ctx.deps;
  const subset = run.delegation ? new Set(run.delegation.tools) : null;
  const compute = () => {
    const names = [
      ...enabledToolNames(
        agent,
        registry.list().map((t) => t.spec.name),
      ),
      ...(delegates ? [DELEGATE_TOOL] : []),
    ].filter((n) => subset === null || (subset.has(n) && !NEVER_DELEGATED.has(n)));
    return registry.definitionsFor(names, principal.scopes);
  };
  if (!sessionTools) return compute();
  // A replaced grant is a new key: the session then sees the tools its new grant allows.
  const key = `${agent.id}@${agent.version}:${[...principal.scopes].sort().join(',')}:${JSON.stringify(mcpGrantsOf(agent))}:${delegates ? 'd' : ''}${subset ? [...subset].sort().join(',') : ''}`;
  return sessionTools.get(ctx.claim.sessionId, key, compute);
}

/** The sequence of the run's first event: where its conversation starts when no checkpoint says so. */
async function firstSequenceOfRun(ctx: LeaseContext, principal: Principal): Promise<number> {
  const events = await ctx.deps.store.listRunEvents(ctx.claim.runId, principal, 0);
  return events[0]?.sequence ?? 0;
}

/** The run's model calls so far, in order: where a run that fell back stands (ModelChain.resume). */
async function startedCalls(ctx: LeaseContext, principal: Principal): Promise<StartedCall[]> {
  const events = await ctx.deps.store.listRunEvents(ctx.claim.runId, principal, 0);
  return events.flatMap((e) => (e.type === 'model.request.started' ? [e.data] : []));
}
