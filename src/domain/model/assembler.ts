import type { ProviderReasoningItem, ToolCallItem } from '../conversation/items';
import { ModelPermanentError, ModelProtocolError, ModelTransientError } from '../errors';
import type {
  ModelCompletedEvent,
  ModelEvent,
  ModelFailedEvent,
  ModelTurn,
  ReasoningDeltaEvent,
  TextDeltaEvent,
} from './model-events';

/**
 * The one shared fold from a normalized model stream to a ModelTurn (plan §10.2). Every provider
 * adapter, the fake and the demo model go through it, so stream invariants are enforced once:
 * exactly one terminal event, nothing after it, tool-call arguments assembled by index and parsed
 * only after `completed`, and only the usage on `completed` counted.
 */

/** Called for each display delta as it arrives (for live streaming to clients). */
export type DeltaListener = (event: ReasoningDeltaEvent | TextDeltaEvent) => void | Promise<void>;

/** Why the stream itself broke the protocol; carried in `ModelProtocolError.details.reason`. */
export type StreamViolation =
  | 'missing_terminal_event'
  | 'event_after_terminal'
  | 'invalid_tool_call_index'
  | 'tool_call_without_id'
  | 'tool_call_without_name'
  | 'duplicate_tool_call_id'
  | 'unknown_event_type';

type ToolCallParts = { callId?: string; name?: string; raw: string };

/** Mutable fold state; kept private so the only ways in are `assembleTurn` and `foldEvents`. */
class TurnFold {
  private text = '';
  private readonly calls = new Map<number, ToolCallParts>();
  private readonly reasoningItems: ProviderReasoningItem[] = [];
  private completed: ModelCompletedEvent | null = null;
  /** Whether any content arrived; the retry policy treats a failure after output differently. */
  private hadOutput = false;

  /** Applies one event; throws on a `failed` event or a protocol violation. */
  push(event: ModelEvent): void {
    if (this.completed !== null) {
      throw this.violation('event_after_terminal', `model stream sent '${event.type}' after 'completed'`);
    }
    switch (event.type) {
      case 'reasoning_delta':
        // Display only: raw reasoning text is never part of the turn (plan §10.2, §6.8).
        this.hadOutput = true;
        return;
      case 'text_delta':
        this.hadOutput = true;
        this.text += event.text;
        return;
      case 'tool_call_delta':
        this.hadOutput = true;
        this.pushToolCallDelta(event.index, event.callId, event.name, event.argumentsDelta);
        return;
      case 'reasoning_item':
        this.hadOutput = true;
        this.reasoningItems.push(event.item);
        return;
      case 'usage':
        // Provisional usage is for live counters only; `completed` carries the authoritative totals.
        return;
      case 'completed':
        this.completed = event;
        return;
      case 'failed':
        throw this.failure(event);
      default: {
        const unknown: never = event;
        throw this.violation(
          'unknown_event_type',
          `model stream sent an unknown event type '${String((unknown as { type?: unknown }).type)}'`,
        );
      }
    }
  }

  /** Ends the fold; throws when the stream ended without a terminal event. */
  finish(): ModelTurn {
    const completed = this.completed;
    if (completed === null) {
      throw this.violation('missing_terminal_event', 'model stream ended without a completed or failed event');
    }
    const toolCalls: ToolCallItem[] = [];
    const malformedToolCalls: { callId: string; name: string; raw: string }[] = [];
    const seenIds = new Set<string>();
    for (const [index, parts] of [...this.calls.entries()].sort(([a], [b]) => a - b)) {
      const { callId, name } = parts;
      if (callId === undefined) throw this.violation('tool_call_without_id', `tool call #${index} has no call id`);
      if (name === undefined) throw this.violation('tool_call_without_name', `tool call ${callId} has no name`);
      // Results are matched to calls by id on the next request, so ids must be unique in a turn.
      if (seenIds.has(callId)) throw this.violation('duplicate_tool_call_id', `tool call id ${callId} is repeated`);
      seenIds.add(callId);
      const args = parseArguments(parts.raw);
      if (args === null) malformedToolCalls.push({ callId, name, raw: parts.raw });
      else toolCalls.push({ kind: 'tool_call', callId, name, arguments: args });
    }
    return {
      text: this.text,
      toolCalls,
      malformedToolCalls,
      reasoningItems: this.reasoningItems,
      usage: completed.usage,
      stopReason: completed.stopReason,
      ...(completed.providerCost !== undefined ? { providerCost: completed.providerCost } : {}),
      providerMetadata: completed.providerMetadata,
    };
  }

  private pushToolCallDelta(index: number, callId: string | undefined, name: string | undefined, delta: string): void {
    if (!Number.isInteger(index) || index < 0) {
      throw this.violation('invalid_tool_call_index', `tool call delta has invalid index ${String(index)}`);
    }
    const parts = this.calls.get(index) ?? { raw: '' };
    // The first delta carrying an id or name wins: later repeats (e.g. on `.done` events) are echoes.
    if (parts.callId === undefined && callId !== undefined && callId !== '') parts.callId = callId;
    if (parts.name === undefined && name !== undefined && name !== '') parts.name = name;
    parts.raw += delta;
    this.calls.set(index, parts);
  }

  private failure(event: ModelFailedEvent): Error {
    const details = {
      kind: event.kind,
      providerCode: event.providerCode,
      streamHadOutput: this.hadOutput,
      ...(event.retryAfterMs !== undefined ? { retryAfterMs: event.retryAfterMs } : {}),
      ...(event.httpStatus !== undefined ? { httpStatus: event.httpStatus } : {}),
    };
    switch (event.kind) {
      case 'transient':
        return new ModelTransientError(event.message, details);
      case 'permanent':
        return new ModelPermanentError(event.message, details);
      case 'protocol':
        return new ModelProtocolError(event.message, details);
      default: {
        const unknown: never = event.kind;
        return new ModelProtocolError(`model stream failed with unknown kind '${String(unknown)}': ${event.message}`, {
          ...details,
          reason: 'unknown_event_type',
        });
      }
    }
  }

  private violation(reason: StreamViolation, message: string): ModelProtocolError {
    return new ModelProtocolError(message, { reason, streamHadOutput: this.hadOutput });
  }
}

/**
 * Parses assembled tool-call arguments; null when they are not a JSON object. An empty string is
 * `{}` because providers stream no argument fragments at all for a call without parameters.
 */
function parseArguments(raw: string): Record<string, unknown> | null {
  if (raw.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  return value as Record<string, unknown>;
}

/**
 * Folds a live provider stream into one turn, forwarding text and reasoning deltas to `onDelta`
 * as they arrive. Throws ModelTransientError / ModelPermanentError / ModelProtocolError for a
 * `failed` event (details: kind, providerCode, streamHadOutput) and ModelProtocolError when the
 * stream has no terminal event or continues after one.
 */
export async function assembleTurn(events: AsyncIterable<ModelEvent>, onDelta?: DeltaListener): Promise<ModelTurn> {
  const fold = new TurnFold();
  for await (const event of events) {
    fold.push(event);
    if (onDelta !== undefined && (event.type === 'text_delta' || event.type === 'reasoning_delta')) {
      await onDelta(event);
    }
  }
  return fold.finish();
}

/** The same fold over a recorded event list, synchronously (tests, replays, recorded fixtures). */
export function foldEvents(events: readonly ModelEvent[]): ModelTurn {
  const fold = new TurnFold();
  for (const event of events) fold.push(event);
  return fold.finish();
}
