import Decimal from 'decimal.js';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type { ModelEvent, StopReason } from '../../../../domain/model/model-events';
import type { TokenUsage } from '../../../../domain/run/usage';
import { failed } from '../../shared/failures';
import { TextToolCallParser } from '../../shared/text-tool-calls';
import { ThinkScrubber } from '../../shared/think-scrubber';
import type { ToolNameCodec } from '../../shared/tool-names';

type Delta = ChatCompletionChunk.Choice.Delta & { reasoning_content?: string | null; reasoning?: string | null };
type Usage = CompletionUsage & { cost?: number | string | null };

/**
 * Chat-completions chunks -> normalized events. Content goes through the boundary-gated `<think>`
 * scrubber (in-band reasoning becomes display-only reasoning deltas) and, for `xml` models, the
 * `<tool_call>` parser; native `tool_calls` deltas are assembled by index (a missing id gets a
 * deterministic one); `reasoning_content` / `reasoning` fields are reasoning deltas. The turn
 * completes when the stream ends after a finish reason; usage (and OpenRouter's `usage.cost`)
 * comes from the final chunk.
 */
export class ChatEventMapper {
  private readonly think = new ThinkScrubber();
  private readonly xml: TextToolCallParser | null;
  private readonly calls = new Map<number, { index: number; id: string }>();
  private nextIndex = 0;
  private finish: ChatCompletionChunk.Choice['finish_reason'] = null;
  private usage: Usage | null = null;
  private reasoningText = '';
  private id = '';
  private servedModel = '';

  constructor(
    private readonly provider: string,
    private readonly names: ToolNameCodec,
    private readonly attemptId: string,
    private readonly keepReasoning: boolean,
    xmlTools: boolean,
  ) {
    this.xml = xmlTools ? new TextToolCallParser() : null;
  }

  map(chunk: ChatCompletionChunk): ModelEvent[] {
    this.id = chunk.id || this.id;
    this.servedModel = chunk.model || this.servedModel;
    if (chunk.usage) this.usage = chunk.usage;
    const out: ModelEvent[] = [];
    for (const choice of chunk.choices ?? []) {
      if (choice.index !== 0) continue;
      const delta = (choice.delta ?? {}) as Delta;
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') out.push(...this.reasoning(reasoning));
      if (typeof delta.content === 'string' && delta.content !== '')
        out.push(...this.content(this.think.push(delta.content)));
      if (typeof delta.refusal === 'string' && delta.refusal !== '')
        out.push({ type: 'text_delta', text: delta.refusal });
      for (const call of delta.tool_calls ?? []) out.push(this.toolDelta(call));
      if (choice.finish_reason) this.finish = choice.finish_reason;
    }
    return out;
  }

  /** After the stream ended: flush held-back text, then complete (or report a cut stream). */
  end(): ModelEvent[] {
    const out = this.content(this.think.end());
    if (this.xml) out.push(...this.textPieces(this.xml.end()));
    if (this.finish === null) {
      out.push(
        failed('transient', `${this.provider}: the stream ended without a finish reason (connection cut)`, {
          providerCode: 'stream_truncated',
        }),
      );
      return out;
    }
    if (this.keepReasoning && this.reasoningText !== '') {
      out.push({
        type: 'reasoning_item',
        item: {
          kind: 'provider_reasoning',
          provider: this.provider,
          opaquePayload: { type: 'reasoning_content', text: this.reasoningText },
        },
      });
    }
    const cost = this.usage?.cost;
    out.push({
      type: 'completed',
      stopReason: this.stopReason(),
      usage: usageOf(this.usage),
      ...(cost !== undefined && cost !== null && Number.isFinite(Number(cost))
        ? { providerCost: new Decimal(String(cost)).toFixed() }
        : {}),
      providerMetadata: {
        completion_id: this.id,
        model: this.servedModel,
        finish_reason: this.finish,
        ...(this.usage ? {} : { usage_missing: 'true' }),
      },
    });
    return out;
  }

  private reasoning(text: string): ModelEvent[] {
    if (this.keepReasoning) this.reasoningText += text;
    return [{ type: 'reasoning_delta', text }];
  }

  private content(part: { text: string; reasoning: string }): ModelEvent[] {
    const out: ModelEvent[] = part.reasoning === '' ? [] : this.reasoning(part.reasoning);
    if (part.text === '') return out;
    if (!this.xml) return [...out, { type: 'text_delta', text: part.text }];
    return [...out, ...this.textPieces(this.xml.push(part.text))];
  }

  private textPieces(pieces: ReturnType<TextToolCallParser['push']>): ModelEvent[] {
    return pieces.map((p): ModelEvent => {
      if (p.type === 'text') return { type: 'text_delta', text: p.text };
      const index = this.nextIndex++;
      return {
        type: 'tool_call_delta',
        index,
        callId: this.syntheticId(index),
        name: this.names.decode(p.name),
        argumentsDelta: p.rawArguments,
      };
    });
  }

  private toolDelta(call: NonNullable<Delta['tool_calls']>[number]): ModelEvent {
    let slot = this.calls.get(call.index);
    // Some servers reuse index 0 for every call, each with its own id: a new id is a new call.
    if (!slot || (call.id !== undefined && call.id !== '' && call.id !== slot.id)) {
      const index = this.nextIndex++;
      slot = { index, id: call.id || this.syntheticId(index) };
      this.calls.set(call.index, slot);
      return {
        type: 'tool_call_delta',
        index,
        callId: slot.id,
        ...(call.function?.name ? { name: this.names.decode(call.function.name) } : {}),
        argumentsDelta: call.function?.arguments ?? '',
      };
    }
    return {
      type: 'tool_call_delta',
      index: slot.index,
      ...(call.function?.name ? { name: this.names.decode(call.function.name) } : {}),
      argumentsDelta: call.function?.arguments ?? '',
    };
  }

  private syntheticId(index: number): string {
    return `call_${this.attemptId.replace(/[^a-zA-Z0-9]/g, '').slice(0, 12)}_${index}`;
  }

  private stopReason(): StopReason {
    if (this.nextIndex > 0) return 'tool_use';
    switch (this.finish) {
      case 'length':
        return 'max_tokens';
      case 'content_filter':
        return 'content_filter';
      case 'tool_calls':
      case 'function_call':
        return 'tool_use';
      default:
        return 'end_turn';
    }
  }
}

export function usageOf(usage: CompletionUsage | null): TokenUsage {
  if (!usage)
    return { uncachedInputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, reasoningTokens: 0 };
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const written = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    uncachedInputTokens: Math.max(0, usage.prompt_tokens - cached - written),
    cachedInputTokens: cached,
    cacheWriteTokens: written,
    outputTokens: usage.completion_tokens,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}
