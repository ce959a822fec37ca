import type { ToolResultTrust } from '../../../domain/events/payloads';
import { UNTRUSTED_NOTICE } from '../../../domain/tools/outcomes';
import type { ToolResult } from '../../../domain/tools/tool-spec';
import { fitToolResult } from '../../tool-result-artifacts';
import type { LoadedSkill } from '../../../domain/deciders/tool-invocation';
import type { NewEvent } from '../../../domain/events/payloads';
import type { Authorized } from './authorize';
import { counted, decided, fail, type CallScope } from './call-scope';
import type { ToolCallOutcome } from './types';

/**
 * Steps 9–11 of plan §8.3: validate the result, label its trust (§11.2), truncate it (keeping an
 * oversized result whole as an artifact, §18.4) and persist it. A non-idempotent tool's outcome is
 * written at once (lost, it would turn into UNCERTAIN), and so is any outcome when the worker is
 * stopping; otherwise the last call's result may be queued (`deferResult`) for the step's checkpoint.
 */
export async function recordResult(
  s: CallScope,
  a: Authorized,
  result: ToolResult,
  deferResult: boolean,
): Promise<ToolCallOutcome> {
  const { ctx, call, p } = s;
  const write = deferResult && a.tool.spec.idempotency !== 'non_idempotent' && !ctx.signal.aborted ? s.later : s.now;
  // Told to stop before the tool answered: write nothing more. Recovery retries a safe tool and
  // reviews an unsafe one. A result that did arrive is still recorded (it happened).
  if (ctx.signal.aborted && !result.ok) return { kind: 'stopped' };
  if (!result.ok) return fail(s, result.errorCode, result.message, result.retryable, write);
  const validated = p.registry.validateResult(call.name, result.output);
  if (!validated.ok)
    return fail(s, 'tool_result_validation_error', `${call.name} returned an invalid result`, false, write);
  // Untrusted content is handed to the model as labelled, delimited data.
  const trust = await trustOf(s, a.ext.trust ?? 'internal_tool', result.output);
  const labelled =
    trust === 'external_untrusted' ? { trust, notice: UNTRUSTED_NOTICE, data: result.output } : result.output;
  const where = {
    tenantId: ctx.principal.tenantId,
    principalId: ctx.principal.principalId,
    runId: ctx.runId,
    sessionId: ctx.sessionId,
    invocationId: s.invocationId,
    nowMs: p.clock.nowMs(),
  };
  const { output, truncated } = await fitToolResult(labelled, a.tool.spec, where, p.artifacts);
  const latencyMs = p.clock.nowMs() - s.startedMs;
  const loadedSkill = skillOf(a.ext.eventsFor?.(result.output, s.invocationId) ?? []);
  const traces = tracesOf(a.ext.tracesFor?.(result.output, s.invocationId, ctx.runId) ?? []);
  await write([
    ...decided(s, {
      kind: 'CompleteToolCall',
      result: output,
      truncated,
      latencyMs,
      trust,
      ...(loadedSkill ? { loadedSkill } : {}),
    }),
    ...traces,
  ]);
  return counted(s, call.name, 'succeeded');
}

async function trustOf(s: CallScope, rule: string, output: Record<string, unknown>): Promise<ToolResultTrust> {
  if (rule !== 'workspace_provenance') return rule as ToolResultTrust;
  // Provenance within the run: internal only when this run wrote exactly this content to this path.
  const writes = await s.p.records.succeededInvocations(s.ctx.runId, 'workspace.write_text');
  const known = writes.some((w) => w.result?.path === output.path && w.result?.sha256 === output.sha256);
  return known ? 'internal_tool' : 'external_untrusted';
}

/** A tool's retrieval traces (`tracesFor`): only `memory.retrieved` may ride with a completion. */
function tracesOf(extra: readonly NewEvent[]): readonly NewEvent[] {
  for (const e of extra)
    if (e.type !== 'memory.retrieved') throw new Error(`a tool extension may not record ${e.type}`);
  return extra;
}

/**
 * What a tool extension records with the completion (`eventsFor`): today only `skill.load`'s
 * `run.skill.loaded`, which the tool invocation decider spells with the completion.
 */
function skillOf(extra: readonly NewEvent[]): LoadedSkill | undefined {
  for (const e of extra) {
    if (e.type !== 'run.skill.loaded') throw new Error(`a tool extension may not record ${e.type}`);
    const { invocationId: _invocationId, ...skill } = (e as NewEvent<'run.skill.loaded'>).data;
    return skill;
  }
  return undefined;
}
