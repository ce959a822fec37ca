import type { ModelToolDefinition } from '../../../domain/model/model-events';
import { TagSplitter } from './tag-splitter';
import type { ToolNameCodec } from './tool-names';

/**
 * Tool calling for endpoints without native function calling (plan §10.7): the tools are described
 * in the system prompt in the Hermes/Qwen convention, and the model answers with
 * `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks, parsed here from the stream.
 */
export function toolsPrompt(tools: readonly ModelToolDefinition[], names: ToolNameCodec): string {
  const signatures = tools.map((t) =>
    JSON.stringify({
      type: 'function',
      function: { name: names.encode(t.name), description: t.description, parameters: t.inputSchema },
    }),
  );
  return [
    '# Tools',
    '',
    'You may call one or more functions to assist with the user query.',
    'You are provided with function signatures within <tools></tools> XML tags:',
    '<tools>',
    ...signatures,
    '</tools>',
    '',
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:',
    '<tool_call>',
    '{"name": <function-name>, "arguments": <args-json-object>}',
    '</tool_call>',
  ].join('\n');
}

export function toolCallText(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}

export type TextToolPiece =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'call'; readonly name: string; readonly rawArguments: string };

/** Streams visible text through, lifting out complete `<tool_call>` blocks. */
export class TextToolCallParser {
  private readonly splitter = new TagSplitter(['tool_call'], 'anywhere');
  private block = '';

  push(chunk: string): TextToolPiece[] {
    return this.collect(this.splitter.push(chunk), false);
  }

  end(): TextToolPiece[] {
    return this.collect(this.splitter.end(), true);
  }

  private collect(pieces: ReturnType<TagSplitter['push']>, final: boolean): TextToolPiece[] {
    const out: TextToolPiece[] = [];
    for (const p of pieces) {
      if (p.type === 'outside') out.push({ type: 'text', text: p.text });
      else if (p.type === 'inside') this.block += p.text;
      else {
        out.push(parseBlock(this.block));
        this.block = '';
      }
    }
    // An unclosed block at the end: still a call if its JSON is complete.
    if (final && this.block.trim() !== '') {
      out.push(parseBlock(this.block));
      this.block = '';
    }
    return out;
  }
}

function parseBlock(inner: string): TextToolPiece {
  try {
    const value = JSON.parse(inner) as { name?: unknown; arguments?: unknown; parameters?: unknown };
    if (typeof value === 'object' && value !== null && typeof value.name === 'string') {
      const args = value.arguments ?? value.parameters ?? {};
      return { type: 'call', name: value.name, rawArguments: typeof args === 'string' ? args : JSON.stringify(args) };
    }
  } catch {
    // Not JSON: if it names a function it is a malformed call (reported to the model), otherwise prose.
    const name = /"name"\s*:\s*"([^"]+)"/.exec(inner);
    if (name) return { type: 'call', name: name[1], rawArguments: inner.trim() };
  }
  return { type: 'text', text: `<tool_call>${inner}</tool_call>` };
}
