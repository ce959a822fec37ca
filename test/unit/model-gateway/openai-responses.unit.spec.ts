import { createOpenAIResponsesProvider } from '../../../src/adapters/model/openai/responses/responses-provider';
import { assembleTurn } from '../../../src/domain/model/assembler';
import type { ModelFailedEvent } from '../../../src/domain/model/model-events';
import { costOf } from '../../../src/domain/run/usage';
import { attempt, calculatorRequest, collect, resolved, TEST_KEY, testModel, testProfile } from './support/profiles';
import { ReplayServer } from './support/replay-server';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

function provider(modelOverrides = {}) {
  const profile = testProfile('responses', `${server.origin}/v1`, testModel('gpt-5-mini', modelOverrides));
  return { profile, provider: createOpenAIResponsesProvider(profile, TEST_KEY) };
}

describe('the OpenAI Responses adapter against recorded streams', () => {
  it('sends a stateless request with encoded tool names and encrypted reasoning included', async () => {
    server.enqueue('openai-responses/tool-call');
    const { profile, provider: p } = provider();
    await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const [req] = server.requests;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/responses');
    expect(req.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(req.json).toMatchObject({
      model: 'gpt-5-mini',
      instructions: 'You are a test agent.',
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      tools: [{ type: 'function', name: 'math_calculate', strict: false }],
    });
  });

  it('assembles a tool call with its call_id and the original dotted tool name, plus the opaque reasoning item', async () => {
    server.enqueue('openai-responses/tool-call');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(turn.toolCalls).toEqual([
      {
        kind: 'tool_call',
        callId: 'call_Xk2mP9qR4sT7vW1yZ3bD5fH8',
        name: 'math.calculate',
        arguments: { expression: '17 * 23' },
      },
    ]);
    expect(turn.stopReason).toBe('tool_use');
    expect(turn.reasoningItems).toHaveLength(1);
    expect(turn.reasoningItems[0].provider).toBe('openai');
    expect(turn.reasoningItems[0].opaquePayload).toEqual({
      type: 'reasoning',
      id: 'rs_07a1c2d3e4f5a6b70068e4c1f3b4c5d6e7f8a9b0c1d2e3f4',
      summary: [],
      encrypted_content: expect.stringMatching(/^gAAAAA/) as unknown,
    });
    expect(turn.providerMetadata.response_id).toBe('resp_07a1c2d3e4f5a6b70068e4c1f2a3b4c5d6e7f8a9b0c1d2e3');
  });

  it('replays the reasoning item and the call_id on the request after the tool result', async () => {
    server.enqueue('openai-responses/tool-call', 'openai-responses/final-answer');
    const { profile, provider: p } = provider();
    const first = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const call = first.toolCalls[0];
    const request = calculatorRequest({
      conversation: [
        ...calculatorRequest().conversation,
        ...first.reasoningItems,
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
    const second = await assembleTurn(p.stream(request, resolved(profile), attempt()));
    expect(second.text).toBe('The result is 391.');
    const input = server.requests[1].json.input as Record<string, unknown>[];
    expect(input.slice(1)).toEqual([
      first.reasoningItems[0].opaquePayload,
      {
        type: 'function_call',
        call_id: 'call_Xk2mP9qR4sT7vW1yZ3bD5fH8',
        name: 'math_calculate',
        arguments: '{"expression":"17 * 23"}',
      },
      { type: 'function_call_output', call_id: 'call_Xk2mP9qR4sT7vW1yZ3bD5fH8', output: '{"value":391}' },
    ]);
  });

  it("never sends another provider's reasoning items", async () => {
    server.enqueue('openai-responses/final-answer');
    const { profile, provider: p } = provider();
    const request = calculatorRequest({
      conversation: [
        ...calculatorRequest().conversation,
        {
          kind: 'provider_reasoning',
          provider: 'anthropic',
          opaquePayload: { type: 'thinking', thinking: 'x', signature: 'sig' },
        },
      ],
    });
    await assembleTurn(p.stream(request, resolved(profile), attempt()));
    expect(JSON.stringify(server.requests[0].json)).not.toContain('thinking');
  });

  it('maps cached and reasoning usage and prices them to the hand-computed figure', async () => {
    server.enqueue('openai-responses/reasoning-summary');
    const { profile, provider: p } = provider();
    const events = await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(
      events
        .filter((e) => e.type === 'reasoning_delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toContain('capital of France');
    const turn = await assembleTurn(
      (async function* () {
        yield* events;
      })(),
    );
    expect(turn.text).toBe('The capital of France is Paris.');
    expect(turn.usage).toEqual({
      uncachedInputTokens: 214,
      cachedInputTokens: 1792,
      cacheWriteTokens: 0,
      outputTokens: 412,
      reasoningTokens: 384,
    });
    // (214 × 0.25 + 1792 × 0.025 + 412 × 2.00) / 1e6 = 922.3 / 1e6
    expect(costOf(turn.usage, profile.models[0].prices!)).toBe('0.0009223');
    // Only the opaque part of the reasoning item is kept: no summary text.
    expect(JSON.stringify(turn.reasoningItems)).not.toContain('SECRET-REASONING-MARKER');
  });

  it('assembles parallel tool calls in order with their ids', async () => {
    server.enqueue('openai-responses/parallel-tool-calls');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(turn.toolCalls.map((c) => [c.callId, c.arguments.expression])).toEqual([
      ['call_A1b2C3d4E5f6G7h8I9j0K1l2', '17 * 23'],
      ['call_M3n4O5p6Q7r8S9t0U1v2W3x4', '12 * 9'],
    ]);
  });

  it('treats response.incomplete as a completed turn with stop reason incomplete', async () => {
    server.enqueue('openai-responses/incomplete');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(turn.stopReason).toBe('incomplete');
    expect(turn.providerMetadata.incomplete_reason).toBe('max_output_tokens');
    expect(turn.text).toBe('Once upon a time, in a');
  });

  it.each([
    ['error-400', 'permanent', undefined],
    ['error-401', 'permanent', undefined],
    ['error-429', 'transient', 2000],
    ['error-500', 'transient', undefined],
    ['failed-event', 'transient', undefined],
    ['dropped-connection', 'transient', undefined],
    ['malformed-stream', 'protocol', undefined],
  ])('maps %s to one %s failure', async (name, kind, retryAfterMs) => {
    server.enqueue(`openai-responses/${name}`);
    const { profile, provider: p } = provider();
    const events = await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const terminal = events.filter((e) => e.type === 'completed' || e.type === 'failed');
    expect(terminal).toHaveLength(1);
    expect(events[events.length - 1]).toBe(terminal[0]);
    const f = terminal[0] as ModelFailedEvent;
    expect(f.type).toBe('failed');
    expect(f.kind).toBe(kind);
    expect(f.retryAfterMs).toBe(retryAfterMs);
    expect(f.message).not.toContain(TEST_KEY);
    expect(f.message).not.toMatch(/sk-test-\*/);
  });

  it('aborts the HTTP request when the attempt is cancelled mid-stream', async () => {
    server.enqueue('openai-responses/tool-call');
    const { profile, provider: p } = provider();
    const controller = new AbortController();
    const events = [];
    for await (const e of p.stream(calculatorRequest(), resolved(profile), attempt({ signal: controller.signal }))) {
      events.push(e);
      if (e.type === 'tool_call_delta') controller.abort();
    }
    const last = events[events.length - 1] as ModelFailedEvent;
    expect(last).toMatchObject({ type: 'failed', kind: 'transient', providerCode: 'aborted' });
  });

  it('ends with a transient timeout when the attempt deadline passes', async () => {
    server.enqueue('openai-responses/tool-call');
    const { profile, provider: p } = provider();
    const events = await collect(
      p.stream(calculatorRequest(), resolved(profile), attempt({ deadlineMs: Date.now() - 1 })),
    );
    expect(events[events.length - 1]).toMatchObject({ type: 'failed', kind: 'transient', providerCode: 'timeout' });
    expect(events.filter((e) => e.type === 'completed' || e.type === 'failed')).toHaveLength(1);
  });
});
