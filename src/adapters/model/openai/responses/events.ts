import type { ResponseStreamEvent, ResponseUsage, Response } from 'openai/resources/responses/responses';
import type { ModelEvent, StopReason } from '../../../../domain/model/model-events';
import type { TokenUsage } from '../../../../domain/run/usage';
import { failed, kindForErrorType, scrubMessage } from '../../shared/failures';
import type { ToolNameCodec } from '../../shared/tool-names';

/**
 * Responses API stream events -> normalized events, exactly as the table of plan §10.2 says:
 * output_text deltas are text; reasoning summary/text deltas are display-only reasoning; a
 * `function_call` output item starts a tool call (with its `call_id`) whose argument deltas follow;
 * a finished `reasoning` item becomes the opaque continuation item; `response.completed` carries the
 * authoritative usage; `response.incomplete` is a completed turn with stop reason `incomplete`;
 * `response.failed` and `error` end the stream as failures.
 */
export class ResponsesEventMapper {
  private readonly calls = new Map<number, { index: number; argsSeen: boolean }>();
  private readonly textSeen = new Set<number>();
  private responseId = '';
  private servedModel = '';

  constructor(
    private readonly provider: string,
    private readonly names: ToolNameCodec,
  ) {}

  map(event: ResponseStreamEvent): ModelEvent[] {
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress':
      case 'response.queued':
        this.responseId = event.response.id;
        this.servedModel = event.response.model;
        return [];
      case 'response.completed':
        return [this.completed(event.response, this.calls.size > 0 ? 'tool_use' : 'end_turn')];
      case 'response.incomplete': {
        const reason = event.response.incomplete_details?.reason ?? 'unknown';
        return [
          this.completed(event.response, reason === 'content_filter' ? 'content_filter' : 'incomplete', {
            incomplete_reason: reason,
          }),
        ];
      }
      case 'response.failed': {
        const error = event.response.error;
        const code = error?.code ?? 'response_failed';
        return [
          failed(
            kindForErrorType(code),
            `${this.provider}: response failed: ${scrubMessage(error?.message ?? 'no detail')}`,
            { providerCode: code },
          ),
        ];
      }
      case 'error':
        return [
          failed(kindForErrorType(event.code), `${this.provider}: ${scrubMessage(event.message)}`, {
            providerCode: event.code ?? 'stream_error',
          }),
        ];
      default:
        return this.mapOutput(event);
    }
  }

  /** The events that carry output: text, reasoning and tool-call deltas, and finished items. */
  private mapOutput(event: ResponseStreamEvent): ModelEvent[] {
    switch (event.type) {
      case 'response.output_item.added':
        return this.itemAdded(event.output_index, event.item);
      case 'response.function_call_arguments.delta': {
        const call = this.call(event.output_index);
        call.argsSeen = true;
        return [{ type: 'tool_call_delta', index: call.index, argumentsDelta: event.delta }];
      }
      case 'response.function_call_arguments.done': {
        const call = this.call(event.output_index);
        if (call.argsSeen || event.arguments === '') return [];
        call.argsSeen = true;
        return [{ type: 'tool_call_delta', index: call.index, argumentsDelta: event.arguments }];
      }
      case 'response.output_text.delta':
        this.textSeen.add(event.output_index);
        return event.delta === '' ? [] : [{ type: 'text_delta', text: event.delta }];
      case 'response.refusal.delta':
        this.textSeen.add(event.output_index);
        return [{ type: 'text_delta', text: event.delta }];
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        return event.delta === '' ? [] : [{ type: 'reasoning_delta', text: event.delta }];
      case 'response.output_item.done':
        return this.itemDone(event.output_index, event.item);
      default:
        return [];
    }
  }

  /** A `function_call` item starts a tool call; other added items wait for their deltas. */
  private itemAdded(outputIndex: number, item: Response['output'][number]): ModelEvent[] {
    if (item.type !== 'function_call') return [];
    const index = this.calls.size;
    const args = item.arguments ?? '';
    this.calls.set(outputIndex, { index, argsSeen: args !== '' });
    return [
      {
        type: 'tool_call_delta',
        index,
        callId: item.call_id,
        name: this.names.decode(item.name),
        argumentsDelta: args,
      },
    ];
  }

  private call(outputIndex: number): { index: number; argsSeen: boolean } {
    const call = this.calls.get(outputIndex);
    if (!call)
      throw new StreamOrderError(`function-call arguments for output item ${outputIndex}, which was never added`);
    return call;
  }

  private itemDone(outputIndex: number, item: Response['output'][number]): ModelEvent[] {
    switch (item.type) {
      case 'function_call': {
        const call = this.call(outputIndex);
        if (call.argsSeen || item.arguments === '') return [];
        call.argsSeen = true;
        return [{ type: 'tool_call_delta', index: call.index, argumentsDelta: item.arguments }];
      }
      case 'reasoning':
        // Without encrypted content a reasoning item cannot be replayed statelessly (store: false).
        if (typeof item.encrypted_content !== 'string' || item.encrypted_content === '') return [];
        // Only the opaque part is kept: summary and raw reasoning text are never stored (plan §10.6).
        return [
          {
            type: 'reasoning_item',
            item: {
              kind: 'provider_reasoning',
              provider: this.provider,
              opaquePayload: { type: 'reasoning', id: item.id, summary: [], encrypted_content: item.encrypted_content },
            },
          },
        ];
      case 'message': {
        if (this.textSeen.has(outputIndex)) return [];
        const text = item.content
          .map((c) => (c.type === 'output_text' ? c.text : c.type === 'refusal' ? c.refusal : ''))
          .join('');
        return text === '' ? [] : [{ type: 'text_delta', text }];
      }
      default:
        return [];
    }
  }

  private completed(response: Response, stopReason: StopReason, extra: Record<string, string> = {}): ModelEvent {
    const usage = usageOf(response.usage ?? null);
    return {
      type: 'completed',
      stopReason: stopReason === 'end_turn' && this.calls.size > 0 ? 'tool_use' : stopReason,
      usage,
      providerMetadata: {
        response_id: response.id || this.responseId,
        model: response.model || this.servedModel,
        ...(response.service_tier ? { service_tier: response.service_tier } : {}),
        ...extra,
      },
    };
  }
}

/** The stream broke the provider's own event order (a protocol failure). */
export class StreamOrderError extends Error {
  override readonly name = 'StreamOrderError';
}

/** Plan §10.2 usage table: cached (and cache-write) tokens are carved out of input; reasoning is part of output. */
export function usageOf(usage: ResponseUsage | null): TokenUsage {
  if (!usage)
    return { uncachedInputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, reasoningTokens: 0 };
  const cached = usage.input_tokens_details?.cached_tokens ?? 0;
  const written = usage.input_tokens_details?.cache_write_tokens ?? 0;
  return {
    uncachedInputTokens: Math.max(0, usage.input_tokens - cached - written),
    cachedInputTokens: cached,
    cacheWriteTokens: written,
    outputTokens: usage.output_tokens,
    reasoningTokens: usage.output_tokens_details?.reasoning_tokens ?? 0,
  };
}
