import type { RunLimits } from '../run/limits';
import type { RunRecord } from '../run/run';
import { briefText, NEVER_DELEGATED, type Brief } from './brief';
import { carveLimits } from './carve';

/** What the parent is: its run row as its lease holds it, its pinned tools and its scopes. */
export interface DelegatingParent {
  readonly run: Pick<
    RunRecord,
    | 'id'
    | 'sessionId'
    | 'tenantId'
    | 'principalId'
    | 'agentId'
    | 'agentVersion'
    | 'modelPolicy'
    | 'parentRunId'
    | 'limits'
    | 'usage'
    | 'stepCount'
    | 'deadlineAt'
    | 'priority'
  >;
  /** The names of the tools pinned for the parent's run (what it was offered). */
  readonly pinnedTools: readonly string[];
  /** The parent run's recorded scope set (`run.queued` v2, ADR 0032): the most a child may hold. */
  readonly scopes: readonly string[];
}

/** A child's agent, resolved by the caller (the agent catalog) before planning. */
export interface ChildAgent {
  readonly id: string;
  readonly version: number;
  readonly modelPolicy: string;
}

/** Fresh ids for one child: its session, its run, its brief message. */
export interface ChildIds {
  readonly sessionId: string;
  readonly runId: string;
  readonly messageId: string;
}

/** Everything one child run is materialized from. */
export interface ChildPlan {
  readonly briefIndex: number;
  readonly brief: Brief;
  readonly ids: ChildIds;
  readonly agent: ChildAgent;
  readonly text: string;
  readonly tools: readonly string[];
  readonly scopes: readonly string[];
  readonly limits: RunLimits;
  readonly deadlineAt: string | null;
}

export interface PlanInput {
  readonly parent: DelegatingParent;
  readonly briefs: readonly Brief[];
  readonly maxFanOut: number;
  readonly nowMs: number;
  /** One set of fresh ids per brief, in order. */
  readonly ids: readonly ChildIds[];
  /** The agents the briefs name (and the parent's own), by id; a missing one is an unknown agent. */
  readonly agents: ReadonlyMap<string, ChildAgent>;
}

/**
 * Checks a `delegate.run` call's briefs against the parent and plans one child per brief (plan
 * §27.6, ADR 0037), or says, as the model will read it, why nothing is materialized: a child cannot
 * delegate (depth cap 1), the fan-out is within 1..`maxFanOut`, each brief's tools are tools the
 * parent was offered (never `delegate.run` or `skill.manage`), its agent is known, and its limits fit
 * in what the parent has left (carve.ts). Pure.
 */
export function planDelegation(input: PlanInput): { ok: true; children: ChildPlan[] } | { ok: false; message: string } {
  const { parent, briefs } = input;
  if (parent.run.parentRunId !== null)
    return { ok: false, message: 'a child run cannot delegate: delegation is one level deep' };
  if (briefs.length < 1 || briefs.length > input.maxFanOut)
    return { ok: false, message: `delegate.run takes 1 to ${input.maxFanOut} briefs; this call has ${briefs.length}` };
  const pinned = new Set(parent.pinnedTools);
  for (const [i, b] of briefs.entries()) {
    const refused = toolRefusal(b, i, pinned) ?? (b.objective === '' ? `brief ${i + 1} has an empty objective` : null);
    if (refused) return { ok: false, message: refused };
    if (!input.agents.has(b.agentId ?? parent.run.agentId))
      return { ok: false, message: `brief ${i + 1} names an unknown agent ${b.agentId}` };
  }
  const carved = carveLimits(
    briefs.map((b) => b.limits),
    parent.run,
    input.nowMs,
  );
  if (!carved.ok) return carved;
  const children = briefs.map((brief, i) => ({
    briefIndex: i,
    brief,
    ids: input.ids[i],
    agent: input.agents.get(brief.agentId ?? parent.run.agentId)!,
    text: briefText(brief),
    tools: [...new Set(brief.tools)],
    scopes: [...parent.scopes],
    limits: carved.children[i].limits,
    deadlineAt: carved.children[i].deadlineAt,
  }));
  return { ok: true, children };
}

function toolRefusal(b: Brief, i: number, pinned: ReadonlySet<string>): string | null {
  for (const t of b.tools) {
    if (NEVER_DELEGATED.has(t)) return `brief ${i + 1}: ${t} cannot be given to a child run`;
    if (!pinned.has(t)) return `brief ${i + 1} names the tool ${t}, which is not one of the parent's tools`;
  }
  return null;
}
