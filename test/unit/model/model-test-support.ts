import type { ConversationItem, ToolCallItem, ToolResultItem } from '../../../src/domain/conversation/items';
import type {
  ModelAttempt,
  ModelRequest,
  ModelToolDefinition,
  ResolvedModel,
} from '../../../src/domain/model/model-events';
import type { Clock } from '../../../src/ports/clock';

/** A clock frozen at one instant whose sleep is a real timer honouring the abort signal. */
export function testClock(nowMs = Date.UTC(2025, 0, 15, 12, 0, 0)): Clock {
  return {
    nowMs: () => nowMs,
    nowIso: () => new Date(nowMs).toISOString(),
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted === true) {
          reject(signal.reason);
          return;
        }
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            reject(signal.reason);
          },
          { once: true },
        );
      }),
  };
}

export function tool(name: string): ModelToolDefinition {
  return { name, description: `the ${name} tool`, inputSchema: { type: 'object' } };
}

export function userMessage(text: string): ConversationItem {
  return { kind: 'user', messageId: `msg_${text.length}`, content: [{ type: 'text', text }] };
}

export function toolCall(callId: string, name: string, args: Record<string, unknown>): ToolCallItem {
  return { kind: 'tool_call', callId, name, arguments: args };
}

export function toolResult(callId: string, name: string, output: unknown, isError = false): ToolResultItem {
  return { kind: 'tool_result', callId, name, output, isError, trust: 'tool_untrusted' };
}

export function modelRequest(options: {
  conversation?: readonly ConversationItem[];
  tools?: readonly string[];
  metadata?: Record<string, string>;
}): ModelRequest {
  return {
    modelPolicy: 'test',
    system: 'You are a test agent.',
    tools: (options.tools ?? []).map(tool),
    conversation: options.conversation ?? [userMessage('hello')],
    maximumOutputTokens: null,
    temperature: null,
    cacheHints: [],
    prefixHash: 'test-prefix-hash',
    metadata: options.metadata ?? {},
  };
}

export function attempt(attemptNumber = 1, extra: Partial<ModelAttempt> = {}): ModelAttempt {
  return { attemptId: `attempt_${attemptNumber}`, attemptNumber, deadlineMs: null, ...extra };
}

export function resolvedModel(provider: string, model: string): ResolvedModel {
  return { provider, model, contextLimit: null };
}

/** Collects a stream's events (for asserting on what was streamed, not only the folded turn). */
export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const events: T[] = [];
  for await (const event of stream) events.push(event);
  return events;
}
