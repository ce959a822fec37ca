import { createChatCompletionsProvider } from '../../../src/adapters/model/openai/chat-completions/chat-completions-provider';
import { assembleTurn } from '../../../src/domain/model/assembler';
import type { ModelEvent, ModelFailedEvent } from '../../../src/domain/model/model-events';
import type { ProviderProfile } from '../../../src/domain/model/provider-profile';
import { attempt, calculatorRequest, collect, resolved, TEST_KEY, testModel, testProfile } from './support/profiles';
import { ReplayServer } from './support/replay-server';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

function provider(modelOverrides = {}, profileOverrides: Partial<ProviderProfile> = {}) {
  const profile = testProfile(
    'chat_completions',
    `${server.origin}/v1`,
    testModel('Qwen/Qwen3-8B', {
      prices: {
        uncachedInputPerMillion: '0',
        cachedInputPerMillion: '0',
        cacheWritePerMillion: '0',
        outputPerMillion: '0',
      },
      ...modelOverrides,
    }),
    profileOverrides,
  );
  return { profile, provider: createChatCompletionsProvider(profile, TEST_KEY) };
}

const replay = (events: ModelEvent[]) =>
  (async function* () {
    yield* events;
  })();

describe('the chat_completions adapter against recorded streams', () => {
  it('posts native tools to /v1/chat/completions and asks for usage on the stream', async () => {
    server.enqueue('chat-completions/tool-call');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const [req] = server.requests;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.json).toMatchObject({
      model: 'Qwen/Qwen3-8B',
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: { name: 'math_calculate' } }],
      messages: [
        { role: 'system', content: 'You are a test agent.' },
        { role: 'user', content: 'What is 17 multiplied by 23?' },
      ],
    });
    expect(turn.toolCalls).toEqual([
      {
        kind: 'tool_call',
        callId: 'chatcmpl-tool-3f8e2a1b9c4d4e6f8a0b1c2d3e4f5a6b',
        name: 'math.calculate',
        arguments: { expression: '17 * 23' },
      },
    ]);
    expect(turn.usage).toEqual({
      uncachedInputTokens: 44,
      cachedInputTokens: 192,
      cacheWriteTokens: 0,
      outputTokens: 26,
      reasoningTokens: 0,
    });
    expect(turn.stopReason).toBe('tool_use');
  });

  it('sends the tool call and its result back with the call id preserved', async () => {
    server.enqueue('chat-completions/tool-call', 'chat-completions/final-answer');
    const { profile, provider: p } = provider();
    const first = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const call = first.toolCalls[0];
    const next = calculatorRequest({
      conversation: [
        ...calculatorRequest().conversation,
        call,
        {
          kind: 'tool_result',
          callId: call.callId,
          name: call.name,
          output: { value: 391 },
          isError: false,
          trust: 'tool_untrusted',
        },
      ],
    });
    const second = await assembleTurn(p.stream(next, resolved(profile), attempt()));
    expect(second.text).toBe('The result is 391.');
    const messages = server.requests[1].json.messages as Record<string, unknown>[];
    expect(messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call.callId,
            type: 'function',
            function: { name: 'math_calculate', arguments: '{"expression":"17 * 23"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: call.callId, content: '{"value":391}' },
    ]);
  });

  it('assembles parallel native tool calls with their ids', async () => {
    server.enqueue('chat-completions/parallel-tool-calls');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(turn.toolCalls.map((c) => [c.callId, c.arguments.expression])).toEqual([
      ['chatcmpl-tool-aa11bb22cc33dd44ee55ff6600112233', '17 * 23'],
      ['chatcmpl-tool-44556677889900aabbccddeeff001122', '12 * 9'],
    ]);
  });

  it('scrubs an in-band <think> block split across chunks into display-only reasoning', async () => {
    server.enqueue('chat-completions/think-text');
    const { profile, provider: p } = provider();
    const events = await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const turn = await assembleTurn(replay(events));
    expect(turn.text).toBe('The capital of France is Paris.');
    expect(
      events
        .filter((e) => e.type === 'reasoning_delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toContain('SECRET-REASONING-MARKER');
    // strip_reasoning (the default for chat_completions): nothing kept for the next request.
    expect(turn.reasoningItems).toEqual([]);
  });

  it('does not swallow prose that merely mentions the tag', async () => {
    server.enqueue('chat-completions/prose-mentions-think');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(turn.text).toBe(
      'Models like Qwen wrap reasoning in a <think> tag, closed by </think>.\n<think> on its own line is prose here too.',
    );
  });

  it('parses <tool_call> blocks from text for a model without native tool calling', async () => {
    server.enqueue('chat-completions/xml-tool-call');
    const { profile, provider: p } = provider({ toolCallFormat: 'xml' });
    const turn = await assembleTurn(
      p.stream(calculatorRequest(), resolved(profile), attempt({ attemptId: 'a1b2c3d4-e5f6' })),
    );
    expect(turn.text).toBe('');
    expect(turn.toolCalls).toEqual([
      {
        kind: 'tool_call',
        callId: 'call_a1b2c3d4e5f6_0',
        name: 'math.calculate',
        arguments: { expression: '17 * 23' },
      },
    ]);
    const req = server.requests[0].json as { tools?: unknown; messages: { content: string }[] };
    expect(req.tools).toBeUndefined();
    expect(req.messages[0].content).toContain('<tools>');
    expect(req.messages[0].content).toContain('"name":"math_calculate"');
  });

  it('takes the cost OpenRouter reports as the provider cost, and reasoning fields as reasoning', async () => {
    server.enqueue('chat-completions/openrouter-cost');
    const { profile, provider: p } = provider({}, { stripReasoning: false });
    const events = await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const turn = await assembleTurn(replay(events));
    expect(turn.text).toBe('The capital of France is Paris.');
    expect(turn.providerCost).toBe('0.0001164');
    expect(turn.usage).toEqual({
      uncachedInputTokens: 14,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      outputTokens: 52,
      reasoningTokens: 44,
    });
    expect(turn.reasoningItems).toHaveLength(1);
  });

  it('echoes kept reasoning back only when strip_reasoning is off', async () => {
    const reasoning = {
      kind: 'provider_reasoning' as const,
      provider: 'local',
      opaquePayload: { type: 'reasoning_content', text: 'because' },
    };
    const call = { kind: 'tool_call' as const, callId: 'c1', name: 'math.calculate', arguments: { expression: '1+1' } };
    const conversation = [
      ...calculatorRequest().conversation,
      reasoning,
      call,
      {
        kind: 'tool_result' as const,
        callId: 'c1',
        name: call.name,
        output: 2,
        isError: false,
        trust: 'tool_untrusted' as const,
      },
    ];
    server.enqueue('chat-completions/final-answer', 'chat-completions/final-answer');
    const strict = provider();
    await assembleTurn(
      strict.provider.stream(calculatorRequest({ conversation }), resolved(strict.profile), attempt()),
    );
    const lenient = provider({}, { stripReasoning: false });
    await assembleTurn(
      lenient.provider.stream(calculatorRequest({ conversation }), resolved(lenient.profile), attempt()),
    );
    expect(server.requests[0].raw).not.toContain('reasoning_content');
    expect((server.requests[1].json.messages as Record<string, unknown>[])[2]).toMatchObject({
      role: 'assistant',
      reasoning_content: 'because',
    });
  });

  it.each([
    ['error-400', 'permanent', undefined],
    ['error-401', 'permanent', undefined],
    ['error-429', 'transient', 3000],
    ['error-500', 'transient', undefined],
    ['stream-error', 'transient', undefined],
    ['dropped-connection', 'transient', undefined],
    ['malformed-stream', 'protocol', undefined],
  ])('maps %s to one %s failure', async (name, kind, retryAfterMs) => {
    server.enqueue(`chat-completions/${name}`);
    const { profile, provider: p } = provider();
    const events = await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const terminal = events.filter((e) => e.type === 'completed' || e.type === 'failed');
    expect(terminal).toHaveLength(1);
    expect(events[events.length - 1]).toBe(terminal[0]);
    const f = terminal[0] as ModelFailedEvent;
    expect(f).toMatchObject({ type: 'failed', kind });
    expect(f.retryAfterMs).toBe(retryAfterMs);
    expect(f.message).not.toContain(TEST_KEY);
  });
});
