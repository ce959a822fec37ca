import { assembleTurn, foldEvents } from '../../../src/domain/model/assembler';
import type { ModelEvent } from '../../../src/domain/model/model-events';
import { ModelPermanentError, ModelProtocolError, ModelTransientError } from '../../../src/domain/errors';
import type { TokenUsage } from '../../../src/domain/run/usage';

const FINAL_USAGE: TokenUsage = {
  uncachedInputTokens: 120,
  cachedInputTokens: 30,
  cacheWriteTokens: 5,
  outputTokens: 42,
  reasoningTokens: 7,
};

function completed(stopReason: 'end_turn' | 'tool_use' = 'end_turn'): ModelEvent {
  return { type: 'completed', stopReason, usage: FINAL_USAGE, providerMetadata: { responseId: 'resp_1' } };
}

async function* streamOf(events: readonly ModelEvent[]): AsyncGenerator<ModelEvent> {
  for (const event of events) yield event;
}

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('the shared turn assembler', () => {
  it('concatenates text deltas into the turn text', () => {
    const turn = foldEvents([
      { type: 'text_delta', text: 'The result ' },
      { type: 'text_delta', text: 'is ' },
      { type: 'text_delta', text: '391.' },
      completed(),
    ]);
    expect(turn.text).toBe('The result is 391.');
    expect(turn.toolCalls).toEqual([]);
    expect(turn.stopReason).toBe('end_turn');
    expect(turn.providerMetadata).toEqual({ responseId: 'resp_1' });
  });

  it('forwards text and reasoning deltas to the listener in arrival order', async () => {
    const seen: string[] = [];
    const turn = await assembleTurn(
      streamOf([
        { type: 'reasoning_delta', text: 'thinking' },
        { type: 'text_delta', text: 'Hello' },
        { type: 'text_delta', text: ' world' },
        completed(),
      ]),
      (event) => {
        seen.push(`${event.type}:${event.text}`);
      },
    );
    expect(seen).toEqual(['reasoning_delta:thinking', 'text_delta:Hello', 'text_delta: world']);
    // Raw reasoning text is display-only and never part of the turn.
    expect(turn.text).toBe('Hello world');
  });

  it('assembles interleaved tool-call deltas by index, taking the id and name from the first delta carrying them', () => {
    const turn = foldEvents([
      { type: 'tool_call_delta', index: 1, callId: 'call_b', name: 'system.current_time', argumentsDelta: '{"time' },
      { type: 'tool_call_delta', index: 0, callId: 'call_a', name: 'math.calculate', argumentsDelta: '{"expre' },
      { type: 'tool_call_delta', index: 1, argumentsDelta: 'zone":"UTC"}' },
      { type: 'tool_call_delta', index: 0, callId: 'ignored_echo', argumentsDelta: 'ssion":"17 * 23"}' },
      completed('tool_use'),
    ]);
    expect(turn.toolCalls).toEqual([
      { kind: 'tool_call', callId: 'call_a', name: 'math.calculate', arguments: { expression: '17 * 23' } },
      { kind: 'tool_call', callId: 'call_b', name: 'system.current_time', arguments: { timezone: 'UTC' } },
    ]);
    expect(turn.stopReason).toBe('tool_use');
  });

  it('reports calls whose arguments are not a JSON object as malformed instead of failing the turn', () => {
    const turn = foldEvents([
      {
        type: 'tool_call_delta',
        index: 0,
        callId: 'call_1',
        name: 'math.calculate',
        argumentsDelta: '{"expression": ',
      },
      { type: 'tool_call_delta', index: 1, callId: 'call_2', name: 'math.calculate', argumentsDelta: '[1, 2]' },
      {
        type: 'tool_call_delta',
        index: 2,
        callId: 'call_3',
        name: 'math.calculate',
        argumentsDelta: '{"expression":"1+1"}',
      },
      completed('tool_use'),
    ]);
    expect(turn.malformedToolCalls).toEqual([
      { callId: 'call_1', name: 'math.calculate', raw: '{"expression": ' },
      { callId: 'call_2', name: 'math.calculate', raw: '[1, 2]' },
    ]);
    expect(turn.toolCalls.map((c) => c.callId)).toEqual(['call_3']);
  });

  it('treats a call with no argument fragments as having empty arguments', () => {
    const turn = foldEvents([
      { type: 'tool_call_delta', index: 0, callId: 'call_1', name: 'system.current_time', argumentsDelta: '' },
      completed('tool_use'),
    ]);
    expect(turn.toolCalls).toEqual([
      { kind: 'tool_call', callId: 'call_1', name: 'system.current_time', arguments: {} },
    ]);
  });

  it('collects provider reasoning items verbatim', () => {
    const item = { kind: 'provider_reasoning' as const, provider: 'anthropic', opaquePayload: { signature: 'sig' } };
    const turn = foldEvents([{ type: 'reasoning_item', item }, { type: 'text_delta', text: 'ok' }, completed()]);
    expect(turn.reasoningItems).toEqual([item]);
  });

  it('takes usage only from the completed event and ignores provisional usage', () => {
    const provisional: TokenUsage = { ...FINAL_USAGE, uncachedInputTokens: 999, outputTokens: 1 };
    const turn = foldEvents([
      { type: 'usage', usage: provisional, provisional: true },
      { type: 'text_delta', text: 'hi' },
      { type: 'usage', usage: provisional, provisional: false },
      { type: 'completed', stopReason: 'end_turn', usage: FINAL_USAGE, providerCost: '0.0012', providerMetadata: {} },
    ]);
    expect(turn.usage).toEqual(FINAL_USAGE);
    expect(turn.providerCost).toBe('0.0012');
  });

  it('omits the provider cost when the provider reports none', () => {
    expect(foldEvents([completed()])).not.toHaveProperty('providerCost');
  });

  it('throws a protocol error when the stream ends without a terminal event', async () => {
    await expect(assembleTurn(streamOf([{ type: 'text_delta', text: 'cut off' }]))).rejects.toMatchObject({
      constructor: ModelProtocolError,
      details: { reason: 'missing_terminal_event', streamHadOutput: true },
    });
  });

  it('throws a protocol error when events follow the completed event', () => {
    const error = thrownBy(() => foldEvents([completed(), { type: 'text_delta', text: 'late' }]));
    expect(error).toBeInstanceOf(ModelProtocolError);
    expect((error as ModelProtocolError).details.reason).toBe('event_after_terminal');
  });

  it('throws a protocol error when a stream has two terminal events', () => {
    expect(() => foldEvents([completed(), completed()])).toThrow(ModelProtocolError);
    expect(() => foldEvents([completed(), { type: 'failed', kind: 'transient', message: 'x' }])).toThrow(
      ModelProtocolError,
    );
  });

  it.each([
    ['transient', ModelTransientError],
    ['permanent', ModelPermanentError],
    ['protocol', ModelProtocolError],
  ] as const)('maps a %s failure to its error class with the provider code', async (kind, errorClass) => {
    const events: ModelEvent[] = [{ type: 'failed', kind, message: `${kind} trouble`, providerCode: 'code_42' }];
    await expect(assembleTurn(streamOf(events))).rejects.toMatchObject({
      constructor: errorClass,
      message: `${kind} trouble`,
      details: { kind, providerCode: 'code_42', streamHadOutput: false },
    });
  });

  it('records whether output had streamed before a failure, for the retry decision', () => {
    const error = thrownBy(() =>
      foldEvents([
        { type: 'text_delta', text: 'partial' },
        { type: 'failed', kind: 'transient', message: 'reset' },
      ]),
    );
    expect(error).toBeInstanceOf(ModelTransientError);
    expect((error as ModelTransientError).details.streamHadOutput).toBe(true);
  });

  it('stops reading the stream at a failed event', async () => {
    let closed = false;
    async function* stream(): AsyncGenerator<ModelEvent> {
      try {
        yield { type: 'failed', kind: 'transient', message: 'overloaded' };
        yield { type: 'text_delta', text: 'never read' };
      } finally {
        closed = true;
      }
    }
    await expect(assembleTurn(stream())).rejects.toBeInstanceOf(ModelTransientError);
    expect(closed).toBe(true);
  });

  it('throws a protocol error for a tool call that never received an id or a name', () => {
    expect(() =>
      foldEvents([{ type: 'tool_call_delta', index: 0, name: 'math.calculate', argumentsDelta: '{}' }, completed()]),
    ).toThrow(/no call id/);
    expect(() =>
      foldEvents([{ type: 'tool_call_delta', index: 0, callId: 'call_1', argumentsDelta: '{}' }, completed()]),
    ).toThrow(/no name/);
  });

  it('throws a protocol error when two tool calls share an id', () => {
    expect(() =>
      foldEvents([
        { type: 'tool_call_delta', index: 0, callId: 'dup', name: 'a.b', argumentsDelta: '{}' },
        { type: 'tool_call_delta', index: 1, callId: 'dup', name: 'a.b', argumentsDelta: '{}' },
        completed(),
      ]),
    ).toThrow(ModelProtocolError);
  });

  it('throws a protocol error for an event type it does not know', () => {
    const bogus = { type: 'bogus' } as unknown as ModelEvent;
    expect(() => foldEvents([bogus, completed()])).toThrow(/unknown event type 'bogus'/);
  });
});
