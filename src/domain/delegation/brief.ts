import type { AgentSpec } from '../agent';

/** The control tool that hands work to child runs (plan §21 "Subagents", §27.6; ADR 0037). */
export const DELEGATE_TOOL = 'delegate.run';

/** Tools a child run never gets, whatever its brief names: no delegation deeper than one level. */
export const NEVER_DELEGATED: ReadonlySet<string> = new Set([DELEGATE_TOOL, 'skill.manage']);

/** How many briefs one `delegate.run` call may carry unless the agent says otherwise. */
export const DEFAULT_MAX_FAN_OUT = 4;

/** A brief's own limits (each no larger than what the parent has left). */
export interface BriefLimits {
  readonly maxSteps?: number;
  readonly maxModelCalls?: number;
  readonly maxToolCalls?: number;
  readonly maxInputTokens?: number;
  readonly maxOutputTokens?: number;
  readonly maxCost?: string;
  readonly deadlineSeconds?: number;
}

/** One child's work order: what to do, how to tell it is done, and with which tools. */
export interface Brief {
  readonly objective: string;
  readonly successCondition: string;
  readonly context: string | null;
  /** Artifact ids the child may be told about (references, never contents). */
  readonly artifacts: readonly string[];
  /** The only tools the child may call (a subset of the parent's pinned set). */
  readonly tools: readonly string[];
  readonly limits: BriefLimits;
  /** The agent the child runs as (default: the parent's). */
  readonly agentId: string | null;
}

/** An agent's delegation settings (`delegation:` in its YAML, kept in the agent's metadata). */
export interface DelegationSettings {
  /** true/false: the agent's own choice; null: the process default (DELEGATION_ENABLED). */
  readonly enabled: boolean | null;
  readonly maxFanOut: number;
}

export function delegationSettingsOf(agent: Pick<AgentSpec, 'metadata'>): DelegationSettings {
  const d = agent.metadata.delegation as { enabled?: unknown; max_fan_out?: unknown } | undefined;
  const enabled = typeof d?.enabled === 'boolean' ? d.enabled : null;
  const fan = typeof d?.max_fan_out === 'number' && Number.isInteger(d.max_fan_out) ? d.max_fan_out : null;
  return { enabled, maxFanOut: fan !== null && fan >= 1 ? fan : DEFAULT_MAX_FAN_OUT };
}

/** Whether `delegate.run` is offered to the agent, given the process default. */
export function delegationEnabled(agent: Pick<AgentSpec, 'metadata'>, processDefault: boolean): boolean {
  return delegationSettingsOf(agent).enabled ?? processDefault;
}

/** The tool's arguments (already validated against its JSON Schema) as briefs. */
export function briefsOf(args: Record<string, unknown>): Brief[] {
  const raw = (args.briefs ?? []) as Record<string, unknown>[];
  return raw.map((b) => {
    const l = (b.limits ?? {}) as Record<string, unknown>;
    const limits: Record<string, unknown> = {
      maxSteps: l.max_steps,
      maxModelCalls: l.max_model_calls,
      maxToolCalls: l.max_tool_calls,
      maxInputTokens: l.max_input_tokens,
      maxOutputTokens: l.max_output_tokens,
      maxCost: l.max_cost,
      deadlineSeconds: l.deadline_seconds,
    };
    for (const k of Object.keys(limits)) if (limits[k] === undefined || limits[k] === null) delete limits[k];
    return {
      objective: String(b.objective).trim(),
      successCondition: String(b.success_condition).trim(),
      context: typeof b.context === 'string' && b.context.trim() !== '' ? b.context : null,
      artifacts: Array.isArray(b.artifacts) ? (b.artifacts as string[]) : [],
      tools: (b.tools as string[]) ?? [],
      limits: limits,
      agentId: typeof b.agent_id === 'string' ? b.agent_id : null,
    };
  });
}

/**
 * The child's first (and only) user message: the objective first, so a reader (or the demo model)
 * sees the task itself, then how to tell it is done, the context and the artifact references.
 */
export function briefText(b: Brief): string {
  const parts = [b.objective, '', `Success condition: ${b.successCondition}`];
  if (b.context) parts.push('', `Context: ${b.context}`);
  if (b.artifacts.length > 0) parts.push('', `Artifacts: ${b.artifacts.join(', ')}`);
  parts.push('', 'Answer concisely: your final answer is all the delegating agent receives.');
  return parts.join('\n');
}
