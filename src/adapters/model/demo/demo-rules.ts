import { textOf, type ConversationItem, type ToolResultItem } from '../../../domain/conversation/items';
import type { ModelRequest } from '../../../domain/model/model-events';
import { parseActionRequest, type ActionRequest } from './action-requests';
import { extractArithmeticExpression } from './arithmetic-question';
import { consensusReply } from './consensus-replies';
import { parseTimeQuestion } from './time-question';
import { memoryDecision, rememberedTimeZone, type MemoryRule } from './memory-requests';
import { parseScheduleAsk, scheduleStep, type ScheduleAsk } from './schedule-requests';

/**
 * The demo model's decision for one request (the rules are documented in demo-provider.ts).
 * Pure: the same request always gets the same decision.
 */

export const CALCULATOR_TOOL = 'math.calculate';
export const CLOCK_TOOL = 'system.current_time';
export const ASK_USER_TOOL = 'conversation.ask_user';
export const EXTERNAL_WRITE_TOOL = 'demo.external_write';
export const WRITE_TOOL = 'workspace.write_text';
export const READ_TOOL = 'workspace.read_text';
export const LIST_TOOL = 'workspace.list_files';
export const EXPORT_TOOL = 'artifact.export';
export const RUN_TOOL = 'sandbox.run_command';
export const DELEGATE_TOOL = 'delegate.run';

/** Which rule produced the decision; reported in provider metadata for debugging. */
export type DemoRule =
  | 'calculate'
  | 'time'
  | 'echo'
  | 'ask'
  | 'send'
  | 'write'
  | 'read'
  | 'list'
  | 'call'
  | 'export'
  | 'run'
  | 'skill'
  | 'schedule'
  | 'delegate'
  | 'consensus'
  | MemoryRule;
export const SKILL_LOAD_TOOL = 'skill.load';

export type DemoDecision =
  | {
      readonly kind: 'tool_call';
      readonly rule: DemoRule;
      readonly name: string;
      readonly arguments: Record<string, unknown>;
    }
  | { readonly kind: 'text'; readonly rule: DemoRule; readonly text: string };

const MAX_QUOTED_CHARS = 200;

/** Decides the demo model's reply to the latest user message. */
export function decideDemoReply(request: ModelRequest): DemoDecision {
  const { message, after } = latestUserTurn(request.conversation);
  const offered = new Set(request.tools.map((t) => t.name));

  const consensus = consensusReply(message);
  if (consensus !== null) return { kind: 'text', rule: 'consensus', text: consensus };
  const memory = memoryDecision(message, request.conversation, offered, after);
  if (memory !== null) return memory;
  const scheduled = parseScheduleAsk(message);
  if (scheduled !== null) return scheduleDecision(scheduled, offered, after);
  const action = parseActionRequest(message);
  if (action !== null) return actionStep(action, offered, after);
  const time = parseTimeQuestion(message);
  if (time !== null) {
    // No zone named: a time zone the user asked to be remembered (the session's memory snapshot).
    const zone = time.timezone ?? rememberedTimeZone(request.conversation);
    const args = zone === undefined ? {} : { timezone: zone };
    return toolStep('time', CLOCK_TOOL, args, offered, after, answerTime);
  }
  const expression = extractArithmeticExpression(message);
  if (expression !== null) {
    return toolStep('calculate', CALCULATOR_TOOL, { expression }, offered, after, answerCalculation);
  }
  const quoted = message.length > MAX_QUOTED_CHARS ? `${message.slice(0, MAX_QUOTED_CHARS)}...` : message;
  return {
    kind: 'text',
    rule: 'echo',
    text: `You said: "${quoted}". I am the offline demo model; ask me to calculate something or for the time.`,
  };
}

/** A schedule phrasing (schedule-requests.ts): its tool calls while the tools are offered, then the answer. */
function scheduleDecision(
  ask: ScheduleAsk,
  offered: ReadonlySet<string>,
  after: readonly ConversationItem[],
): DemoDecision {
  const step = scheduleStep(ask, after);
  if (step.kind === 'text') return { kind: 'text', rule: 'schedule', text: step.text };
  if (!offered.has(step.name))
    return {
      kind: 'text',
      rule: 'schedule',
      text: `I would need the ${step.name} tool for that, but it is not available to me.`,
    };
  return { kind: 'tool_call', rule: 'schedule', name: step.name, arguments: step.arguments };
}

/** First step: call the tool. Second step (its result is in the conversation): answer from it. */
function toolStep(
  rule: DemoRule,
  tool: string,
  args: Record<string, unknown>,
  offered: ReadonlySet<string>,
  after: readonly ConversationItem[],
  answer: (result: ToolResultItem) => string,
): DemoDecision {
  const result = after.filter((i): i is ToolResultItem => i.kind === 'tool_result' && i.name === tool).at(-1);
  if (result !== undefined) return { kind: 'text', rule, text: answer(result) };
  if (!offered.has(tool)) {
    return { kind: 'text', rule, text: `I would need the ${tool} tool to answer that, but it is not available to me.` };
  }
  return { kind: 'tool_call', rule, name: tool, arguments: args };
}

function actionStep(a: ActionRequest, offered: ReadonlySet<string>, after: readonly ConversationItem[]): DemoDecision {
  switch (a.kind) {
    case 'call':
      return toolStep('call', a.name, a.arguments, offered, after, (r) => {
        if (r.isError) return `The call to ${a.name} failed: ${errorMessage(r.output)}`;
        const { data, untrusted } = unwrap(r.output);
        const shown = clip(JSON.stringify(data) ?? 'null', MAX_QUOTED_CHARS);
        return untrusted
          ? `${a.name} returned (untrusted data, shown as is, not followed): ${shown}`
          : `${a.name} returned: ${shown}`;
      });
    case 'skill':
      return toolStep('skill', SKILL_LOAD_TOOL, { name: a.name }, offered, after, (r) =>
        r.isError
          ? `I could not load the skill ${a.name}: ${errorMessage(r.output)}`
          : `Loaded skill ${field(r.output, 'name')} v${field(r.output, 'version')}; I will follow its instructions.`,
      );
    case 'ask':
      return toolStep('ask', ASK_USER_TOOL, { question: a.question }, offered, after, (r) =>
        r.isError
          ? `I could not ask you: ${errorMessage(r.output)}`
          : `You answered: "${clip(field(r.output, 'answer'), MAX_QUOTED_CHARS)}".`,
      );
    case 'send':
      return toolStep('send', EXTERNAL_WRITE_TOOL, { target: a.target, text: a.text }, offered, after, (r) =>
        answerSend(r, a.target),
      );
    case 'write':
      return toolStep('write', WRITE_TOOL, { path: a.path, content: a.content }, offered, after, (r) =>
        r.isError
          ? `I could not write ${a.path}: ${errorMessage(r.output)}`
          : `Wrote ${field(r.output, 'size_bytes')} bytes to ${field(r.output, 'path')} (sha256 ${field(r.output, 'sha256')}).`,
      );
    case 'read':
      return toolStep('read', READ_TOOL, { path: a.path }, offered, after, (r) => {
        if (r.isError) return `I could not read ${a.path}: ${errorMessage(r.output)}`;
        const { data, untrusted } = unwrap(r.output);
        const quoted = `"${clip(field(data, 'content'), MAX_QUOTED_CHARS)}"`;
        return untrusted
          ? `${a.path} contains (untrusted data, shown as is, not followed): ${quoted}`
          : `${a.path} contains: ${quoted}`;
      });
    case 'list':
      return toolStep('list', LIST_TOOL, {}, offered, after, (r) => {
        if (r.isError) return `I could not list the workspace: ${errorMessage(r.output)}`;
        const files = (unwrap(r.output).data as { files?: { path: string }[] }).files ?? [];
        return files.length === 0
          ? 'The workspace is empty.'
          : `The workspace has ${files.length} file(s): ${files.map((f) => f.path).join(', ')}.`;
      });
    case 'export':
      return toolStep('export', EXPORT_TOOL, { path: a.path }, offered, after, (r) =>
        r.isError
          ? `I could not export ${a.path}: ${errorMessage(r.output)}`
          : `Exported ${a.path} as artifact ${field(r.output, 'artifact_id')} (${field(r.output, 'size_bytes')} bytes, sha256 ${field(r.output, 'sha256')}).`,
      );
    case 'run':
      return toolStep('run', RUN_TOOL, { command: a.argv }, offered, after, (r) => answerRun(r));
    case 'delegate':
      return toolStep(
        'delegate',
        DELEGATE_TOOL,
        { briefs: a.tasks.map((t) => briefFor(t, offered)) },
        offered,
        after,
        answerDelegation,
      );
  }
}

/** One brief per task, with the one tool the demo rules would use for it (when the parent has it). */
function briefFor(task: string, offered: ReadonlySet<string>): Record<string, unknown> {
  const tool =
    parseTimeQuestion(task) !== null ? CLOCK_TOOL : extractArithmeticExpression(task) !== null ? CALCULATOR_TOOL : null;
  return {
    objective: task,
    success_condition: 'A concise, correct answer.',
    tools: tool !== null && offered.has(tool) ? [tool] : [],
  };
}

/** Each child's answer (untrusted data, quoted as is) or its error, in brief order. */
function answerDelegation(r: ToolResultItem): string {
  if (r.isError) return `I could not delegate: ${errorMessage(r.output)}`;
  const results = ((unwrap(r.output).data as { results?: Record<string, unknown>[] }).results ?? []).map((x) => {
    const error = x.error as { message?: string } | null;
    const what =
      x.status === 'completed'
        ? clip(typeof x.answer === 'string' ? x.answer : '', MAX_QUOTED_CHARS)
        : `${String(x.status)}: ${error?.message ?? ''}`;
    return `${String(x.brief)}. ${what}`;
  });
  return `I delegated ${results.length} task(s); their answers (untrusted data, shown as is): ${results.join(' ')}`;
}

/** The command's outcome with its stdout (untrusted data, quoted, never followed). */
function answerRun(r: ToolResultItem): string {
  if (r.isError) return `I could not run it: ${errorMessage(r.output)}`;
  const data = unwrap(r.output).data;
  const stdout = clip(field(data, 'stdout').trimEnd(), MAX_QUOTED_CHARS);
  const stderr = clip(field(data, 'stderr').trimEnd(), MAX_QUOTED_CHARS);
  const reason = field(data, 'kill_reason');
  const how =
    reason === 'exited'
      ? `exited with code ${field(data, 'exit_code')}`
      : `was stopped (${reason}: ${field(data, 'kill_detail')})`;
  return `The command ${how}. Output (untrusted, shown as is): ${stdout === '' ? '(none)' : stdout}${
    stderr !== '' && stderr !== '?' ? ` — stderr: ${stderr}` : ''
  }`;
}

/** Tells denied, expired, cancelled and failed apart: the runtime's refusal codes say which. */
function answerSend(r: ToolResultItem, target: string): string {
  if (!r.isError) return target === 'public' ? 'Published.' : `Sent to ${target}.`;
  const code = errorCode(r.output);
  if (code === 'approval_denied') return `I did not send it: the request was denied, so nothing was sent to ${target}.`;
  if (code === 'approval_expired')
    return `I did not send it: the approval expired before anyone approved it, so nothing was sent to ${target}.`;
  if (code === 'approval_pending')
    return `The message to ${target} is still waiting for approval; it has not been sent yet.`;
  if (code === 'uncertain_marked_failed')
    return `I cannot confirm the message to ${target} was sent; it was marked as failed after an interruption.`;
  return `I could not send it: ${errorMessage(r.output)}`;
}

/** An EXTERNAL_UNTRUSTED result arrives as `{trust, notice, data}`; anything else is the data itself. */
function unwrap(output: unknown): { data: unknown; untrusted: boolean } {
  if (
    typeof output === 'object' &&
    output !== null &&
    (output as Record<string, unknown>).trust === 'external_untrusted'
  ) {
    return { data: (output as Record<string, unknown>).data, untrusted: true };
  }
  return { data: output, untrusted: false };
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}...` : s;
}

function errorCode(output: unknown): string | null {
  if (typeof output === 'object' && output !== null) {
    const e = (output as Record<string, unknown>).error;
    if (typeof e === 'object' && e !== null && typeof (e as Record<string, unknown>).code === 'string')
      return (e as Record<string, string>).code;
  }
  return null;
}

function answerCalculation(result: ToolResultItem): string {
  if (result.isError) return `I could not calculate that: ${errorMessage(result.output)}`;
  return `The result is ${field(result.output, 'result')}.`;
}

function answerTime(result: ToolResultItem): string {
  if (result.isError) return `I could not get the current time: ${errorMessage(result.output)}`;
  const o = result.output;
  return (
    `The current time in ${field(o, 'timezone')} is ${field(o, 'local_time')} ` +
    `(${field(o, 'local_date')}, UTC${field(o, 'utc_offset')}).`
  );
}

/** The latest user message's text and the items after it (this run's tool calls and results). */
function latestUserTurn(conversation: readonly ConversationItem[]): { message: string; after: ConversationItem[] } {
  for (let i = conversation.length - 1; i >= 0; i -= 1) {
    const item = conversation[i];
    if (item.kind === 'user') return { message: textOf(item.content).trim(), after: conversation.slice(i + 1) };
  }
  return { message: '', after: [...conversation] };
}

function field(output: unknown, name: string): string {
  if (typeof output === 'object' && output !== null && name in output) {
    const value = (output as Record<string, unknown>)[name];
    if (typeof value === 'string' || typeof value === 'number') return String(value);
  }
  return '?';
}

/** The runtime's error outcome shape is its own; accept a string, `{message}` or `{error: {message}}`. */
function errorMessage(output: unknown): string {
  if (typeof output === 'string') return output;
  if (typeof output === 'object' && output !== null) {
    const o = output as Record<string, unknown>;
    if (typeof o.message === 'string') return o.message;
    if (typeof o.error === 'object' && o.error !== null) return errorMessage(o.error);
    if (typeof o.error === 'string') return o.error;
  }
  return JSON.stringify(output) ?? 'unknown error';
}
