import { textOf, type ConversationItem, type ToolResultItem } from '../../../domain/conversation/items';
import type { ModelRequest } from '../../../domain/model/model-events';
import { extractArithmeticExpression } from './arithmetic-question';
import { parseTimeQuestion } from './time-question';

/**
 * The demo model's decision for one request (the rules are documented in demo-provider.ts).
 * Pure: the same request always gets the same decision.
 */

export const CALCULATOR_TOOL = 'math.calculate';
export const CLOCK_TOOL = 'system.current_time';

/** Which rule produced the decision; reported in provider metadata for debugging. */
export type DemoRule = 'calculate' | 'time' | 'echo';

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

  const time = parseTimeQuestion(message);
  if (time !== null) {
    const args = time.timezone === undefined ? {} : { timezone: time.timezone };
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
