import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
  CacheControlEphemeral,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type { ConversationItem } from '../../../domain/conversation/items';
import type { CacheBreakpoint, ModelRequest } from '../../../domain/model/model-events';
import type { ProfileModel, ProviderProfile } from '../../../domain/model/provider-profile';
import { contentText, toolResultText } from '../shared/content';
import type { ToolNameCodec } from '../shared/tool-names';

/** Anthropic accepts at most four cache_control breakpoints per request. */
export const MAX_BREAKPOINTS = 4;
const DEFAULT_MAX_TOKENS = 4096;

/**
 * ModelRequest -> Messages API request (plan §10.4): text, `tool_use` and `tool_result` blocks;
 * `thinking` / `redacted_thinking` blocks of this provider passed back verbatim, in order, at the
 * start of their assistant message (never altered: the API rejects a modified block); CacheHints
 * become at most four `cache_control` breakpoints.
 */
export function messagesRequest(
  profile: ProviderProfile,
  model: ProfileModel,
  request: ModelRequest,
  names: ToolNameCodec,
): MessageCreateParamsStreaming {
  const messages = toMessages(profile.name, request.conversation, names);
  const tools: Tool[] = request.tools.map((t) => ({
    name: names.encode(t.name),
    description: t.description,
    input_schema: t.inputSchema as Tool['input_schema'],
  }));
  const system: TextBlockParam[] = [{ type: 'text', text: request.system }];
  applyCacheHints(request.cacheHints, system, tools, messages);
  const thinking = model.thinkingBudgetTokens !== null && thinkingContinuityHolds(messages);
  const base = request.maximumOutputTokens ?? model.maxOutputTokens ?? DEFAULT_MAX_TOKENS;
  return {
    model: model.id,
    system,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    stream: true,
    ...(thinking
      ? {
          thinking: { type: 'enabled', budget_tokens: model.thinkingBudgetTokens },
          max_tokens: Math.max(base, model.thinkingBudgetTokens + 1024),
        }
      : { max_tokens: base, ...(request.temperature !== null ? { temperature: request.temperature } : {}) }),
  };
}

function toMessages(provider: string, conversation: readonly ConversationItem[], names: ToolNameCodec): MessageParam[] {
  const messages: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  const push = (role: 'user' | 'assistant', block: ContentBlockParam) => {
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(block);
    else messages.push({ role, content: [block] });
  };
  for (const item of conversation) {
    switch (item.kind) {
      case 'system':
        push('user', { type: 'text', text: item.text });
        break;
      case 'user': {
        const text = contentText(item.content);
        if (text !== '') push('user', { type: 'text', text });
        break;
      }
      case 'assistant':
        if (item.text !== '') push('assistant', { type: 'text', text: item.text });
        break;
      case 'provider_reasoning':
        // Byte-identical and only to the provider that signed it (plan §10.6).
        if (item.provider === provider) push('assistant', item.opaquePayload as unknown as ContentBlockParam);
        break;
      case 'tool_call':
        push('assistant', { type: 'tool_use', id: item.callId, name: names.encode(item.name), input: item.arguments });
        break;
      case 'tool_result':
        push('user', {
          type: 'tool_result',
          tool_use_id: item.callId,
          content: toolResultText(item),
          ...(item.isError ? { is_error: true } : {}),
        });
        break;
      default: {
        const unknown: never = item;
        throw new Error(`unknown conversation item ${JSON.stringify(unknown)}`);
      }
    }
  }
  // tool_result blocks must come first in their user message.
  for (const m of messages) {
    if (m.role === 'user')
      m.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  return messages;
}

/**
 * With thinking on, the API requires the last assistant message of a tool loop to start with its
 * thinking blocks. When they are not available (continuation lost, e.g. after a provider change
 * mid-session), thinking is turned off for this request rather than sending a request the API rejects.
 */
function thinkingContinuityHolds(messages: readonly MessageParam[]): boolean {
  const lastAssistant = [...messages].reverse().find((m) => m.role === 'assistant');
  if (!lastAssistant || typeof lastAssistant.content === 'string') return true;
  const blocks = lastAssistant.content;
  if (!blocks.some((b) => b.type === 'tool_use')) return true;
  return blocks[0]?.type === 'thinking' || blocks[0]?.type === 'redacted_thinking';
}

function applyCacheHints(
  hints: readonly CacheBreakpoint[],
  system: TextBlockParam[],
  tools: Tool[],
  messages: MessageParam[],
): void {
  let used = 0;
  let prefixChars = system.reduce((n, b) => n + b.text.length, 0);
  const control = (h: CacheBreakpoint): CacheControlEphemeral =>
    h.ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
  // Caching only helps above the provider's minimum prefix; estimate ~4 characters per token.
  const worthIt = (h: CacheBreakpoint) => prefixChars / 4 >= h.minTokens && used < MAX_BREAKPOINTS;
  for (const h of hints.filter((x) => x.boundary === 'after_system')) {
    if (worthIt(h)) {
      system[system.length - 1].cache_control = control(h);
      used++;
    }
  }
  prefixChars += JSON.stringify(tools).length;
  for (const h of hints.filter((x) => x.boundary === 'after_tools')) {
    if (tools.length > 0 && worthIt(h)) {
      tools[tools.length - 1].cache_control = control(h);
      used++;
    }
  }
  prefixChars += JSON.stringify(messages).length;
  // History breakpoints form a rolling window: the last message, then the one before it, ...
  let back = 0;
  for (const h of hints.filter((x) => x.boundary === 'after_history_prefix')) {
    const message = messages[messages.length - 1 - back++];
    if (!message || typeof message.content === 'string' || !worthIt(h)) continue;
    const block = message.content[message.content.length - 1];
    // Thinking blocks cannot carry cache_control (and must stay byte-identical).
    if (block.type === 'thinking' || block.type === 'redacted_thinking') continue;
    (block as { cache_control?: CacheControlEphemeral }).cache_control = control(h);
    used++;
  }
}
