import type { ModelEvent, ModelRequest, StopReason } from '../../../domain/model/model-events';
import type { TokenUsage } from '../../../domain/run/usage';

/**
 * Turns a scripted reply (text and/or tool calls) into the normalized event stream a real provider
 * would send: a provisional usage event, text in several chunks, each tool call's arguments in
 * several fragments, then `completed`. Shared by the fake and the demo model so both exercise
 * the same assembler paths as the real adapters.
 */

export interface ScriptedToolCall {
  readonly callId: string;
  readonly name: string;
  /** Streamed verbatim as the argument JSON (may be invalid on purpose). */
  readonly rawArguments: string;
}

export interface ScriptedReply {
  readonly text: string;
  readonly toolCalls: readonly ScriptedToolCall[];
  readonly usage: TokenUsage;
  readonly stopReason: StopReason;
  readonly providerMetadata: Readonly<Record<string, string>>;
}

const WORDS_PER_CHUNK = 3;
const FRAGMENTS_PER_CALL = 3;

/** The reply's events; `terminal: false` drops `completed` to simulate a truncated stream. */
export function replyEvents(reply: ScriptedReply, options: { terminal: boolean }): ModelEvent[] {
  const events: ModelEvent[] = [
    // Mirrors Anthropic's message_start: input is known early, output only at the end.
    { type: 'usage', usage: { ...reply.usage, outputTokens: 0, reasoningTokens: 0 }, provisional: true },
  ];
  for (const text of chunkText(reply.text)) events.push({ type: 'text_delta', text });
  reply.toolCalls.forEach((call, index) => {
    splitFragments(call.rawArguments).forEach((argumentsDelta, i) => {
      events.push(
        i === 0
          ? { type: 'tool_call_delta', index, callId: call.callId, name: call.name, argumentsDelta }
          : { type: 'tool_call_delta', index, argumentsDelta },
      );
    });
  });
  if (options.terminal) {
    events.push({
      type: 'completed',
      stopReason: reply.stopReason,
      usage: reply.usage,
      providerMetadata: reply.providerMetadata,
    });
  }
  return events;
}

/** Splits text into chunks of a few words whose concatenation is exactly the input. */
export function chunkText(text: string): string[] {
  if (text === '') return [];
  const words = text.split(/(?<=\s)(?=\S)/);
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += WORDS_PER_CHUNK) chunks.push(words.slice(i, i + WORDS_PER_CHUNK).join(''));
  return chunks;
}

/** Splits argument JSON into a few fragments, the way providers stream partial JSON. */
export function splitFragments(raw: string): string[] {
  if (raw.length <= 1) return [raw];
  const size = Math.ceil(raw.length / FRAGMENTS_PER_CALL);
  const fragments: string[] = [];
  for (let i = 0; i < raw.length; i += size) fragments.push(raw.slice(i, i + size));
  return fragments;
}

/** Rough token estimate (four characters per token), so offline usage counters are non-zero. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Characters the provider would be sent for this request: system, tool definitions, conversation. */
export function requestChars(request: ModelRequest): number {
  return request.system.length + JSON.stringify(request.tools).length + JSON.stringify(request.conversation).length;
}

/** Estimated output tokens for what the reply streams. */
export function replyOutputTokens(text: string, toolCalls: readonly ScriptedToolCall[]): number {
  return estimateTokens(text.length + toolCalls.reduce((n, c) => n + c.name.length + c.rawArguments.length, 0));
}
