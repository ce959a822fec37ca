import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAnthropicProvider } from '../../../src/adapters/model/anthropic/anthropic-provider';
import { assembleTurn } from '../../../src/domain/model/assembler';
import type { ModelFailedEvent, ModelRequest } from '../../../src/domain/model/model-events';
import { costOf } from '../../../src/domain/run/usage';
import { attempt, calculatorRequest, collect, resolved, TEST_KEY, testModel, testProfile } from './support/profiles';
import { FIXTURES_DIR, ReplayServer } from './support/replay-server';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const SONNET_PRICES = {
  uncachedInputPerMillion: '3',
  cachedInputPerMillion: '0.30',
  cacheWritePerMillion: '3.75',
  outputPerMillion: '15',
};

function provider(modelOverrides = {}) {
  // No /v1: the SDK appends /v1/messages itself (the SDK's own path handling).
  const profile = testProfile(
    'anthropic',
    server.origin,
    testModel('claude-sonnet-4-6', { prices: SONNET_PRICES, thinkingBudgetTokens: 2048, ...modelOverrides }),
  );
  return { profile, provider: createAnthropicProvider(profile, TEST_KEY) };
}

/** The thinking and signature exactly as the recording streamed them. */
function recordedThinking(): { thinking: string; signature: string; redacted: string } {
  const text = readFileSync(join(FIXTURES_DIR, 'anthropic', 'tool-use-thinking.http'), 'utf8');
  const events = text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map(
      (l) =>
        JSON.parse(l.slice(6)) as {
          type: string;
          delta?: { type: string; thinking?: string; signature?: string };
          content_block?: { type: string; data?: string };
        },
    );
  return {
    thinking: events.map((e) => (e.delta?.type === 'thinking_delta' ? e.delta.thinking : '')).join(''),
    signature: events.map((e) => (e.delta?.type === 'signature_delta' ? e.delta.signature : '')).join(''),
    redacted: events.find((e) => e.content_block?.type === 'redacted_thinking')!.content_block!.data!,
  };
}

describe('the Anthropic Messages adapter against recorded streams', () => {
  it('posts to /v1/messages with the key as a bearer token, thinking on and tool names encoded', async () => {
    server.enqueue('anthropic/tool-use-thinking');
    const { profile, provider: p } = provider();
    await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const [req] = server.requests;
    expect(req.path).toBe('/v1/messages');
    expect(req.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(req.json).toMatchObject({
      model: 'claude-sonnet-4-6',
      stream: true,
      system: [{ type: 'text', text: 'You are a test agent.' }],
      thinking: { type: 'enabled', budget_tokens: 2048 },
      tools: [{ name: 'math_calculate' }],
    });
    expect(req.json.max_tokens).toBeGreaterThan(2048);
  });

  it('assembles thinking (with signature), redacted thinking, text and the tool call', async () => {
    server.enqueue('anthropic/tool-use-thinking');
    const { profile, provider: p } = provider();
    const events = await collect(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const turn = await assembleTurn(
      (async function* () {
        yield* events;
      })(),
    );
    const r = recordedThinking();
    expect(
      events
        .filter((e) => e.type === 'reasoning_delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe(r.thinking);
    expect(turn.reasoningItems.map((i) => i.opaquePayload)).toEqual([
      { type: 'thinking', thinking: r.thinking, signature: r.signature },
      { type: 'redacted_thinking', data: r.redacted },
    ]);
    expect(turn.text).toBe("I'll calculate that for you.");
    expect(turn.toolCalls).toEqual([
      {
        kind: 'tool_call',
        callId: 'toolu_01Mq8Zt4Xb7Nv2Kp5Rw9Yc3L',
        name: 'math.calculate',
        arguments: { expression: '17 * 23' },
      },
    ]);
    expect(turn.stopReason).toBe('tool_use');
    // message_delta carried only output_tokens: input must still come from message_start.
    expect(turn.usage).toEqual({
      uncachedInputTokens: 472,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      outputTokens: 156,
      reasoningTokens: 0,
    });
  });

  it('returns the thinking and redacted-thinking blocks byte-for-byte in the request after the tool result', async () => {
    server.enqueue('anthropic/tool-use-thinking', 'anthropic/final-answer-cached');
    const { profile, provider: p } = provider();
    const first = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    const call = first.toolCalls[0];
    const next: ModelRequest = calculatorRequest({
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
    const second = await assembleTurn(p.stream(next, resolved(profile), attempt()));
    expect(second.text).toBe('The result is 391.');
    const body = server.requests[1];
    const r = recordedThinking();
    const messages = body.json.messages as { role: string; content: Record<string, unknown>[] }[];
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[1].content).toEqual([
      { type: 'thinking', thinking: r.thinking, signature: r.signature },
      { type: 'redacted_thinking', data: r.redacted },
      {
        type: 'tool_use',
        id: 'toolu_01Mq8Zt4Xb7Nv2Kp5Rw9Yc3L',
        name: 'math_calculate',
        input: { expression: '17 * 23' },
      },
    ]);
    expect(messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_01Mq8Zt4Xb7Nv2Kp5Rw9Yc3L', content: '{"value":391}' },
    ]);
    // Byte-identical on the wire: the exact JSON encodings of the recorded strings appear in the body.
    expect(body.raw).toContain(JSON.stringify(r.signature));
    expect(body.raw).toContain(JSON.stringify(r.thinking));
    expect(body.raw).toContain(JSON.stringify(r.redacted));
    expect(body.json.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  it('turns thinking off rather than send a tool loop whose thinking blocks were lost', async () => {
    server.enqueue('anthropic/final-answer-cached');
    const { profile, provider: p } = provider();
    const call = {
      kind: 'tool_call' as const,
      callId: 'toolu_x',
      name: 'math.calculate',
      arguments: { expression: '1 + 1' },
    };
    const request = calculatorRequest({
      conversation: [
        ...calculatorRequest().conversation,
        call,
        { kind: 'tool_result', callId: 'toolu_x', name: call.name, output: 2, isError: false, trust: 'tool_untrusted' },
      ],
    });
    await assembleTurn(p.stream(request, resolved(profile), attempt()));
    expect(server.requests[0].json.thinking).toBeUndefined();
  });

  it("drops another provider's reasoning items", async () => {
    server.enqueue('anthropic/final-answer-cached');
    const { profile, provider: p } = provider();
    const request = calculatorRequest({
      conversation: [
        ...calculatorRequest().conversation,
        {
          kind: 'provider_reasoning',
          provider: 'openai',
          opaquePayload: { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA' },
        },
      ],
    });
    await assembleTurn(p.stream(request, resolved(profile), attempt()));
    expect(server.requests[0].raw).not.toContain('rs_1');
  });

  it('prices cache reads and cache writes as separate classes to the hand-computed figure', async () => {
    server.enqueue('anthropic/final-answer-cached');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(turn.usage).toEqual({
      uncachedInputTokens: 20,
      cachedInputTokens: 1536,
      cacheWriteTokens: 210,
      outputTokens: 95,
      reasoningTokens: 0,
    });
    // (20 × 3 + 1536 × 0.30 + 210 × 3.75 + 95 × 15) / 1e6 = 2733.3 / 1e6
    expect(costOf(turn.usage, SONNET_PRICES)).toBe('0.0027333');
  });

  it('translates cache hints into at most four cache_control breakpoints', async () => {
    server.enqueue('anthropic/final-answer-cached');
    const { profile, provider: p } = provider();
    const hint = (
      boundary: 'after_system' | 'after_tools' | 'after_history_prefix',
      ttl: 'default' | '1h' = 'default',
    ) => ({ boundary, minTokens: 0, ttl });
    const call = {
      kind: 'tool_call' as const,
      callId: 'toolu_x',
      name: 'math.calculate',
      arguments: { expression: '1 + 1' },
    };
    const request = calculatorRequest({
      conversation: [
        ...calculatorRequest().conversation,
        call,
        { kind: 'tool_result', callId: 'toolu_x', name: call.name, output: 2, isError: false, trust: 'tool_untrusted' },
      ],
      cacheHints: [
        hint('after_system'),
        hint('after_tools', '1h'),
        hint('after_history_prefix'),
        hint('after_history_prefix'),
        hint('after_history_prefix'),
      ],
    });
    await assembleTurn(p.stream(request, resolved(profile), attempt()));
    const raw = server.requests[0].raw;
    expect(raw.match(/"cache_control"/g)).toHaveLength(4);
    const json = server.requests[0].json as {
      system: { cache_control?: unknown }[];
      tools: { cache_control?: unknown }[];
    };
    expect(json.system[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(json.tools[0].cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
  });

  it('skips a breakpoint whose prefix is below its minimum size', async () => {
    server.enqueue('anthropic/final-answer-cached');
    const { profile, provider: p } = provider();
    await assembleTurn(
      p.stream(
        calculatorRequest({ cacheHints: [{ boundary: 'after_system', minTokens: 1024, ttl: 'default' }] }),
        resolved(profile),
        attempt(),
      ),
    );
    expect(server.requests[0].raw).not.toContain('cache_control');
  });

  it('assembles parallel tool_use blocks in order with their ids', async () => {
    server.enqueue('anthropic/parallel-tool-use');
    const { profile, provider: p } = provider();
    const turn = await assembleTurn(p.stream(calculatorRequest(), resolved(profile), attempt()));
    expect(turn.toolCalls.map((c) => [c.callId, c.arguments.expression])).toEqual([
      ['toolu_01Ab2Cd3Ef4Gh5Ij6Kl7Mn8P', '17 * 23'],
      ['toolu_01Qr9St8Uv7Wx6Yz5Ab4Cd3E', '12 * 9'],
    ]);
  });

  it.each([
    ['error-400', 'permanent', undefined],
    ['error-401', 'permanent', undefined],
    ['error-429', 'transient', 7000],
    ['error-500', 'transient', undefined],
    ['error-529', 'transient', undefined],
    ['stream-error-event', 'transient', undefined],
    ['dropped-connection', 'transient', undefined],
    ['malformed-stream', 'protocol', undefined],
    ['malformed-json', 'protocol', undefined],
  ])('maps %s to one %s failure', async (name, kind, retryAfterMs) => {
    server.enqueue(`anthropic/${name}`);
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
