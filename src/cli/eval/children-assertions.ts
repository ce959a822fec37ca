import type { EventType } from '../../domain/events/payloads';
import type { ChildrenExpectation } from './case-types';
import type { DelegationObservation, Observation } from './observation';

/**
 * `expected.children` (issue 32): the case's child runs — `delegate.run`'s or consensus rounds' —
 * their statuses, the parent's usage as its own plus theirs, their limits carved from what the
 * parent had left, and event counts over their logs.
 */
export function checkChildren(want: ChildrenExpectation, obs: Observation): string[] {
  const d = obs.delegation;
  if (!d) return ['children: the children of the run were not observed'];
  const failures: string[] = [];
  const statuses = d.children.map((c) => c.status);
  if (want.statuses && JSON.stringify(statuses) !== JSON.stringify(want.statuses))
    failures.push(`children: statuses are [${statuses.join(', ')}], expected [${want.statuses.join(', ')}]`);
  if (want.usageSummed) failures.push(...usageSummed(d, obs));
  if (want.budgetCarved) failures.push(...budgetCarved(d, obs));
  for (const [type, n] of Object.entries(want.eventCounts ?? {}) as [EventType, number][]) {
    const got = d.children.reduce((sum, c) => sum + c.events.filter((e) => e.type === type).length, 0);
    if (got !== n) failures.push(`children: ${type} occurs ${got} time(s) over the children, expected ${n}`);
  }
  return failures;
}

function usageSummed(d: DelegationObservation, obs: Observation): string[] {
  if (d.children.length === 0) return ['children: usage_summed: the run has no children'];
  const own = obs.events.filter((e) => e.type === 'model.request.started').length;
  const ownOutput = obs.events.reduce(
    (sum, e) => sum + (e.type === 'model.response.completed' ? e.data.usage.outputTokens : 0),
    0,
  );
  const calls = own + d.children.reduce((sum, c) => sum + c.usage.modelCalls, 0);
  const output = ownOutput + d.children.reduce((sum, c) => sum + c.usage.outputTokens, 0);
  const failures: string[] = [];
  if (d.usage.modelCalls !== calls)
    failures.push(
      `children: usage_summed: the parent counts ${d.usage.modelCalls} model calls, own + children = ${calls}`,
    );
  if (d.usage.outputTokens !== output)
    failures.push(
      `children: usage_summed: the parent counts ${d.usage.outputTokens} output tokens, own + children = ${output}`,
    );
  return failures;
}

/** Per delegation (or round), the children's model-call limits fit in the parent's limit less what it had used. */
function budgetCarved(d: DelegationObservation, obs: Observation): string[] {
  if (d.children.length === 0) return ['children: budget_carved: the run has no children'];
  const failures: string[] = [];
  for (const wait of obs.events.filter((e) => e.type === 'run.waiting_for_children')) {
    if (wait.type !== 'run.waiting_for_children') continue;
    const ids = new Set(wait.data.children.map((c) => c.runId));
    const given = d.children.filter((c) => ids.has(c.runId)).reduce((sum, c) => sum + c.limits.maxModelCalls, 0);
    const usedBefore = usedModelCallsBefore(obs, wait.sequence);
    const left = d.limits.maxModelCalls - usedBefore;
    if (given > left)
      failures.push(
        `children: budget_carved: the children at sequence ${wait.sequence} got ${given} model calls; the parent had ${left} left`,
      );
  }
  return failures;
}

/** The parent's own model calls before `sequence`, plus those of children joined before it. */
function usedModelCallsBefore(obs: Observation, sequence: number): number {
  let used = 0;
  for (const e of obs.events) {
    if (e.sequence >= sequence) break;
    if (e.type === 'model.request.started') used += 1;
    if (e.type === 'run.children_joined') used += e.data.children.reduce((sum, c) => sum + c.usage.modelCalls, 0);
  }
  return used;
}
