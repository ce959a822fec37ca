import type {
  MessageDeltaUsage,
  RawMessageStreamEvent,
  Usage,
  StopReason as AnthropicStopReason,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type { ModelEvent, StopReason } from '../../../domain/model/model-events';
import type { TokenUsage } from '../../../domain/run/usage';
import type { ToolNameCodec } from '../shared/tool-names';

type Block =
  | { kind: 'text' }
  | { kind: 'thinking'; thinking: string; signature: string }
  | { kind: 'redacted'; data: string }
  | { kind: 'tool'; index: number; jsonSeen: boolean; input: unknown }
  | { kind: 'other' };

/** The stream broke the Messages API event order (a protocol failure). */
export class StreamOrderError extends Error {
  override readonly name = 'StreamOrderError';
}

/**
 * Messages API stream events -> normalized events, exactly as the mapping table of plan §10.2:
 * thinking deltas are display-only reasoning and, with their signature, one opaque thinking item at
 * `content_block_stop`; redacted_thinking blocks are kept whole (never dropped); `tool_use` blocks
 * are tool calls assembled from `input_json_delta` by block; usage is merged from `message_start`
 * (input, cache read, cache write) and the cumulative `message_delta` (output), so input is never
 * recorded as zero when the delta omits it; `message_stop` completes the turn.
 */
export class MessagesEventMapper {
  private readonly blocks = new Map<number, Block>();
  private tools = 0;
  private started: Usage | null = null;
  private delta: MessageDeltaUsage | null = null;
  private stop: AnthropicStopReason | null = null;
  private messageId = '';
  private servedModel = '';

  constructor(
    private readonly provider: string,
    private readonly names: ToolNameCodec,
  ) {}

  map(event: RawMessageStreamEvent): ModelEvent[] {
    switch (event.type) {
      case 'message_start':
        this.messageId = event.message.id;
        this.servedModel = event.message.model;
        this.started = event.message.usage;
        return [{ type: 'usage', usage: this.usage(), provisional: true }];
      case 'content_block_start':
        return this.blockStart(event.index, event.content_block);
      case 'content_block_delta':
        return this.blockDelta(event.index, event.delta);
      case 'content_block_stop':
        return this.blockStop(event.index);
      case 'message_delta':
        this.stop = event.delta.stop_reason ?? this.stop;
        this.delta = event.usage;
        return [{ type: 'usage', usage: this.usage(), provisional: true }];
      case 'message_stop':
        return [
          {
            type: 'completed',
            stopReason: this.stopReason(),
            usage: this.usage(),
            providerMetadata: {
              message_id: this.messageId,
              model: this.servedModel,
              ...(this.stop ? { stop_reason: this.stop } : {}),
            },
          },
        ];
      default:
        return [];
    }
  }

  private blockStart(
    index: number,
    block: Extract<RawMessageStreamEvent, { type: 'content_block_start' }>['content_block'],
  ): ModelEvent[] {
    if (this.blocks.has(index)) throw new StreamOrderError(`content block ${index} started twice`);
    switch (block.type) {
      case 'text':
        this.blocks.set(index, { kind: 'text' });
        return block.text ? [{ type: 'text_delta', text: block.text }] : [];
      case 'thinking':
        this.blocks.set(index, { kind: 'thinking', thinking: block.thinking ?? '', signature: block.signature ?? '' });
        return block.thinking ? [{ type: 'reasoning_delta', text: block.thinking }] : [];
      case 'redacted_thinking':
        this.blocks.set(index, { kind: 'redacted', data: block.data });
        return [];
      case 'tool_use': {
        const call = { kind: 'tool' as const, index: this.tools++, jsonSeen: false, input: block.input };
        this.blocks.set(index, call);
        return [
          {
            type: 'tool_call_delta',
            index: call.index,
            callId: block.id,
            name: this.names.decode(block.name),
            argumentsDelta: '',
          },
        ];
      }
      default:
        // server_tool_use and server tool results: executed by the provider, nothing for us to run.
        this.blocks.set(index, { kind: 'other' });
        return [];
    }
  }

  private blockDelta(
    index: number,
    delta: Extract<RawMessageStreamEvent, { type: 'content_block_delta' }>['delta'],
  ): ModelEvent[] {
    const block = this.blocks.get(index);
    if (!block) throw new StreamOrderError(`content_block_delta for block ${index}, which never started`);
    switch (delta.type) {
      case 'text_delta':
        if (block.kind !== 'text') throw new StreamOrderError(`text_delta on a ${block.kind} block`);
        return delta.text === '' ? [] : [{ type: 'text_delta', text: delta.text }];
      case 'thinking_delta':
        if (block.kind !== 'thinking') throw new StreamOrderError(`thinking_delta on a ${block.kind} block`);
        block.thinking += delta.thinking;
        return delta.thinking === '' ? [] : [{ type: 'reasoning_delta', text: delta.thinking }];
      case 'signature_delta':
        if (block.kind !== 'thinking') throw new StreamOrderError(`signature_delta on a ${block.kind} block`);
        block.signature += delta.signature;
        return [];
      case 'input_json_delta':
        if (block.kind === 'other') return [];
        if (block.kind !== 'tool') throw new StreamOrderError(`input_json_delta on a ${block.kind} block`);
        block.jsonSeen = true;
        return [{ type: 'tool_call_delta', index: block.index, argumentsDelta: delta.partial_json }];
      default:
        return [];
    }
  }

  private blockStop(index: number): ModelEvent[] {
    const block = this.blocks.get(index);
    if (!block) throw new StreamOrderError(`content_block_stop for block ${index}, which never started`);
    switch (block.kind) {
      case 'thinking':
        return [
          {
            type: 'reasoning_item',
            item: {
              kind: 'provider_reasoning',
              provider: this.provider,
              opaquePayload: { type: 'thinking', thinking: block.thinking, signature: block.signature },
            },
          },
        ];
      case 'redacted':
        return [
          {
            type: 'reasoning_item',
            item: {
              kind: 'provider_reasoning',
              provider: this.provider,
              opaquePayload: { type: 'redacted_thinking', data: block.data },
            },
          },
        ];
      case 'tool': {
        const input = block.input;
        if (block.jsonSeen || typeof input !== 'object' || input === null || Object.keys(input).length === 0) return [];
        return [{ type: 'tool_call_delta', index: block.index, argumentsDelta: JSON.stringify(input) }];
      }
      default:
        return [];
    }
  }

  private stopReason(): StopReason {
    switch (this.stop) {
      case 'end_turn':
      case 'tool_use':
      case 'max_tokens':
      case 'stop_sequence':
        return this.stop === 'end_turn' && this.tools > 0 ? 'tool_use' : this.stop;
      case 'pause_turn':
        return 'incomplete';
      case 'refusal':
        return 'content_filter';
      case 'model_context_window_exceeded':
        return 'max_tokens';
      default:
        return this.tools > 0 ? 'tool_use' : 'end_turn';
    }
  }

  /** message_delta usage is cumulative; a field it omits (or reports as 0) keeps message_start's value. */
  private usage(): TokenUsage {
    const s = this.started;
    const d = this.delta;
    const pick = (a: number | null | undefined, b: number | null | undefined) => Math.max(a ?? 0, b ?? 0);
    return {
      uncachedInputTokens: pick(s?.input_tokens, d?.input_tokens),
      cachedInputTokens: pick(s?.cache_read_input_tokens, d?.cache_read_input_tokens),
      cacheWriteTokens: pick(s?.cache_creation_input_tokens, d?.cache_creation_input_tokens),
      outputTokens: d?.output_tokens ?? s?.output_tokens ?? 0,
      reasoningTokens: d?.output_tokens_details?.thinking_tokens ?? s?.output_tokens_details?.thinking_tokens ?? 0,
    };
  }
}
