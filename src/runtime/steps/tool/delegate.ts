import { briefsOf } from '../../../domain/delegation/brief';
import { childBatch } from '../../../domain/delegation/materialize';
import { planDelegation } from '../../../domain/delegation/plan';
import { activeTraceIds } from '../../tracing';
import { decided, fail, type CallScope } from './call-scope';
import type { ToolCallOutcome } from './types';

/**
 * `delegate.run` (plan §27.6, ADR 0037): plans one child per brief against the parent (depth,
 * fan-out, tool subsets, limits carved from the remainder, deadline) and suspends the parent with
 * the children to materialize; the `suspend` step writes both in one transaction. A brief that does
 * not fit is a tool error the model sees (`tool_validation_error`), and nothing is materialized.
 */
export async function delegate(s: CallScope, args: Record<string, unknown>, start: boolean): Promise<ToolCallOutcome> {
  const d = s.ctx.delegation;
  if (!d) return fail(s, 'tool_not_enabled', 'delegate.run is not available to this run', false);
  const briefs = briefsOf(args);
  const agentIds = [...new Set([d.parent.run.agentId, ...briefs.flatMap((b) => (b.agentId ? [b.agentId] : []))])];
  const ids = briefs.map(() => ({ sessionId: s.p.ids.uuid(), runId: s.p.ids.uuid(), messageId: s.p.ids.uuid() }));
  const plan = planDelegation({
    parent: d.parent,
    briefs,
    maxFanOut: d.maxFanOut,
    nowMs: s.p.clock.nowMs(),
    ids,
    agents: await d.agents(agentIds),
  });
  if (!plan.ok) return fail(s, 'tool_validation_error', plan.message, false);
  const refused = d.admits ? await d.admits(d.parent.run.tenantId, plan.children.length) : null;
  if (refused) return fail(s, 'tenant_admission', refused, true);
  return {
    kind: 'suspend',
    before: start ? decided(s, { kind: 'StartToolCall' }) : [],
    awaiting: {
      kind: 'children',
      invocationId: s.invocationId,
      // Each child's trace links to the parent's span (the active one: the parent's attempt).
      children: plan.children.map((c) => childBatch(c, d.parent.run, s.invocationId, activeTraceIds())),
    },
  };
}
