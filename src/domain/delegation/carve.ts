import Decimal from 'decimal.js';
import type { RunLimits } from '../run/limits';
import type { RunUsage } from '../run/usage';
import { totalInputTokens } from '../run/usage';
import type { BriefLimits } from './brief';

/**
 * Carving children's limits from what the parent has left (plan §6.5, §27.6; ADR 0037). Model
 * calls, tool calls, tokens and cost are additive (a child's usage joins the parent's), so the
 * children's together fit in the parent's remainder, less one model call the parent keeps for its
 * answer after the join; steps are not (each run counts its own), so each child's steps fit in the
 * parent's remaining steps; deadlines are absolute, no later than the parent's.
 */

/** What the parent has left: null where it has no ceiling. */
export interface Remainder {
  readonly steps: number;
  readonly modelCalls: number;
  readonly toolCalls: number;
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
  readonly cost: string | null;
  /** Milliseconds to the parent's deadline, or null without one. */
  readonly deadlineMs: number | null;
}

export interface ParentBudget {
  readonly limits: RunLimits;
  readonly usage: RunUsage;
  readonly stepCount: number;
  readonly deadlineAt: string | null;
}

/** A child's limits and absolute deadline. */
export interface CarvedLimits {
  readonly limits: RunLimits;
  readonly deadlineAt: string | null;
}

export function remainderOf(p: ParentBudget, nowMs: number): Remainder {
  const sub = (max: number | null, used: number) => (max === null ? null : Math.max(0, max - used));
  return {
    steps: Math.max(0, p.limits.maxSteps - p.stepCount),
    // The parent keeps one model call (and step) for its answer after the join.
    modelCalls: Math.max(0, p.limits.maxModelCalls - p.usage.modelCalls - 1),
    // The delegate.run call itself is counted already.
    toolCalls: Math.max(0, p.limits.maxToolCalls - p.usage.toolCalls),
    inputTokens: sub(p.limits.maxInputTokens, totalInputTokens(p.usage)),
    outputTokens: sub(p.limits.maxOutputTokens, p.usage.outputTokens),
    cost:
      p.limits.maxCost === null ? null : Decimal.max(0, new Decimal(p.limits.maxCost).minus(p.usage.cost)).toString(),
    deadlineMs: p.deadlineAt === null ? null : Math.max(0, Date.parse(p.deadlineAt) - nowMs),
  };
}

type Additive = 'maxModelCalls' | 'maxToolCalls' | 'maxInputTokens' | 'maxOutputTokens';
const ADDITIVE: readonly { key: Additive; rem: keyof Remainder; label: string; min: number }[] = [
  { key: 'maxModelCalls', rem: 'modelCalls', label: 'model calls', min: 1 },
  { key: 'maxToolCalls', rem: 'toolCalls', label: 'tool calls', min: 0 },
  { key: 'maxInputTokens', rem: 'inputTokens', label: 'input tokens', min: 1 },
  { key: 'maxOutputTokens', rem: 'outputTokens', label: 'output tokens', min: 1 },
];

/**
 * Every child's limits, or the first reason the briefs do not fit: a brief's own limit larger than
 * the remainder, the briefs' own limits together larger than it, or a remainder too small to give
 * each child at least one model call. A child without its own limit gets an equal share of what
 * the others' own limits leave.
 */
export function carveLimits(
  briefs: readonly BriefLimits[],
  parent: ParentBudget,
  nowMs: number,
): { ok: true; children: CarvedLimits[] } | { ok: false; message: string } {
  const rem = remainderOf(parent, nowMs);
  const carved: Record<string, number | null>[] = briefs.map(() => ({}));
  for (const a of ADDITIVE) {
    const remaining = rem[a.rem] as number | null;
    const split = splitCount(
      briefs.map((b) => b[a.key] ?? null),
      remaining,
      a.label,
      a.min,
    );
    if (!split.ok) return split;
    split.values.forEach((v, i) => (carved[i][a.key] = v));
  }
  const cost = splitCost(
    briefs.map((b) => b.maxCost ?? null),
    rem.cost,
  );
  if (!cost.ok) return cost;
  const children: CarvedLimits[] = [];
  for (const [i, b] of briefs.entries()) {
    if (b.maxSteps !== undefined && b.maxSteps > rem.steps)
      return refused(`brief ${i + 1} asks for ${b.maxSteps} steps; the parent has ${rem.steps} left`);
    const steps = b.maxSteps ?? rem.steps;
    if (steps < 1) return refused('the parent has no steps left to give a child');
    const deadline = childDeadline(b.deadlineSeconds, rem.deadlineMs, parent.limits.deadlineSeconds, i);
    if (!deadline.ok) return deadline;
    children.push({
      limits: {
        maxSteps: steps,
        maxModelCalls: carved[i].maxModelCalls!,
        maxToolCalls: carved[i].maxToolCalls!,
        maxInputTokens: carved[i].maxInputTokens,
        maxOutputTokens: carved[i].maxOutputTokens,
        maxCost: cost.values[i],
        deadlineSeconds: deadline.seconds,
      },
      deadlineAt: deadline.ms === null ? null : new Date(nowMs + deadline.ms).toISOString(),
    });
  }
  return { ok: true, children };
}

function refused(message: string): { ok: false; message: string } {
  return { ok: false, message };
}

/** Own values where given, an equal share of the rest elsewhere; null everywhere when there is no ceiling. */
function splitCount(
  own: readonly (number | null)[],
  remaining: number | null,
  label: string,
  min: number,
): { ok: true; values: (number | null)[] } | { ok: false; message: string } {
  if (remaining === null) return { ok: true, values: own.map((v) => v) };
  for (const [i, v] of own.entries())
    if (v !== null && v > remaining)
      return refused(`brief ${i + 1} asks for ${v} ${label}; the parent has ${remaining} left`);
  const claimed = own.reduce<number>((s, v) => s + (v ?? 0), 0);
  if (claimed > remaining)
    return refused(`the briefs ask for ${claimed} ${label} together; the parent has ${remaining} left`);
  const open = own.filter((v) => v === null).length;
  const share = open === 0 ? 0 : Math.floor((remaining - claimed) / open);
  if (open > 0 && share < min)
    return refused(`the parent has ${remaining} ${label} left, too few to give ${own.length} children ${min} each`);
  return { ok: true, values: own.map((v) => v ?? share) };
}

function splitCost(
  own: readonly (string | null)[],
  remaining: string | null,
): { ok: true; values: (string | null)[] } | { ok: false; message: string } {
  if (remaining === null) return { ok: true, values: [...own] };
  const rem = new Decimal(remaining);
  for (const [i, v] of own.entries())
    if (v !== null && new Decimal(v).gt(rem))
      return refused(`brief ${i + 1} asks for a cost of ${v}; the parent has ${remaining} left`);
  const claimed = own.reduce((s, v) => s.plus(v ?? 0), new Decimal(0));
  if (claimed.gt(rem))
    return refused(`the briefs ask for a cost of ${claimed.toString()} together; the parent has ${remaining} left`);
  const open = own.filter((v) => v === null).length;
  const share = open === 0 ? new Decimal(0) : rem.minus(claimed).div(open).toDecimalPlaces(8, Decimal.ROUND_DOWN);
  return { ok: true, values: own.map((v) => v ?? share.toString()) };
}

/** A child's deadline: its own (if no later than the parent's), else the parent's; in ms from now. */
function childDeadline(
  ownSeconds: number | undefined,
  parentMs: number | null,
  parentSeconds: number | null,
  i: number,
): { ok: true; ms: number | null; seconds: number | null } | { ok: false; message: string } {
  if (ownSeconds !== undefined) {
    if (parentMs !== null && ownSeconds * 1000 > parentMs)
      return refused(
        `brief ${i + 1} asks for a ${ownSeconds} s deadline; the parent's is ${Math.floor(parentMs / 1000)} s away`,
      );
    return { ok: true, ms: ownSeconds * 1000, seconds: ownSeconds };
  }
  if (parentMs === null) return { ok: true, ms: null, seconds: parentSeconds };
  if (parentMs < 1000) return refused("the parent's deadline is less than a second away");
  return { ok: true, ms: parentMs, seconds: Math.floor(parentMs / 1000) };
}
