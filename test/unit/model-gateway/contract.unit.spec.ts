import { join } from 'node:path';
import { createAnthropicProvider } from '../../../src/adapters/model/anthropic/anthropic-provider';
import { createFakeProvider } from '../../../src/adapters/model/fake';
import { createChatCompletionsProvider } from '../../../src/adapters/model/openai/chat-completions/chat-completions-provider';
import { createOpenAIResponsesProvider } from '../../../src/adapters/model/openai/responses/responses-provider';
import type { ApiMode } from '../../../src/domain/model/provider-profile';
import type { ModelProvider } from '../../../src/ports/model-provider';
import { testClock } from '../model/model-test-support';
import { describeProviderContract, type ContractHarness, type Scenario } from './support/contract';
import { resolved, TEST_KEY, testModel, testProfile } from './support/profiles';
import { FIXTURES_DIR, ReplayServer } from './support/replay-server';

const fake = createFakeProvider({ fixturesDir: join(FIXTURES_DIR, 'fake'), clock: testClock() });
const FAKE_FIXTURE: Record<Scenario, string> = {
  text: 'contract_text',
  tool_call: 'contract_tool_call',
  parallel_tool_calls: 'contract_parallel',
  usage: 'contract_usage',
  transient: 'contract_transient',
  permanent: 'contract_permanent',
  malformed: 'contract_malformed',
};

describeProviderContract({
  name: 'fake',
  arrange: (scenario) => ({
    provider: fake,
    model: { provider: 'fake', model: FAKE_FIXTURE[scenario], contextLimit: null },
  }),
  expect: {
    text: 'The result is 391.',
    toolCall: { callId: 'call_contract_1', name: 'math.calculate', arguments: { expression: '17 * 23' } },
    parallelCallIds: ['call_contract_a', 'call_contract_b'],
    usage: {
      uncachedInputTokens: 214,
      cachedInputTokens: 1792,
      cacheWriteTokens: 64,
      outputTokens: 412,
      reasoningTokens: 384,
    },
  },
});

/** A harness for an SDK adapter pointed at the replay server, one recording per scenario. */
function replayHarness(
  name: string,
  apiMode: ApiMode,
  create: (profile: ReturnType<typeof testProfile>) => ModelProvider,
  recordings: Record<Scenario, string>,
  expectations: ContractHarness['expect'],
): ContractHarness {
  let server: ReplayServer;
  let provider: ModelProvider;
  let profile: ReturnType<typeof testProfile>;
  return {
    name,
    async start() {
      server = await ReplayServer.start();
      profile = testProfile(apiMode, apiMode === 'anthropic' ? server.origin : `${server.origin}/v1`, testModel('m'));
      provider = create(profile);
    },
    stop: () => server.close(),
    arrange(scenario) {
      server.enqueue(
        `${apiMode === 'responses' ? 'openai-responses' : apiMode === 'anthropic' ? 'anthropic' : 'chat-completions'}/${recordings[scenario]}`,
      );
      return { provider, model: resolved(profile) };
    },
    expect: expectations,
  };
}

describeProviderContract(
  replayHarness(
    'OpenAI Responses',
    'responses',
    (p) => createOpenAIResponsesProvider(p, TEST_KEY),
    {
      text: 'final-answer',
      tool_call: 'tool-call',
      parallel_tool_calls: 'parallel-tool-calls',
      usage: 'reasoning-summary',
      transient: 'error-429',
      permanent: 'error-401',
      malformed: 'malformed-stream',
    },
    {
      text: 'The result is 391.',
      toolCall: {
        callId: 'call_Xk2mP9qR4sT7vW1yZ3bD5fH8',
        name: 'math.calculate',
        arguments: { expression: '17 * 23' },
      },
      parallelCallIds: ['call_A1b2C3d4E5f6G7h8I9j0K1l2', 'call_M3n4O5p6Q7r8S9t0U1v2W3x4'],
      usage: {
        uncachedInputTokens: 214,
        cachedInputTokens: 1792,
        cacheWriteTokens: 0,
        outputTokens: 412,
        reasoningTokens: 384,
      },
    },
  ),
);

describeProviderContract(
  replayHarness(
    'Anthropic Messages',
    'anthropic',
    (p) => createAnthropicProvider(p, TEST_KEY),
    {
      text: 'final-answer-cached',
      tool_call: 'tool-use-thinking',
      parallel_tool_calls: 'parallel-tool-use',
      usage: 'final-answer-cached',
      transient: 'error-529',
      permanent: 'error-400',
      malformed: 'malformed-json',
    },
    {
      text: 'The result is 391.',
      toolCall: {
        callId: 'toolu_01Mq8Zt4Xb7Nv2Kp5Rw9Yc3L',
        name: 'math.calculate',
        arguments: { expression: '17 * 23' },
      },
      parallelCallIds: ['toolu_01Ab2Cd3Ef4Gh5Ij6Kl7Mn8P', 'toolu_01Qr9St8Uv7Wx6Yz5Ab4Cd3E'],
      usage: {
        uncachedInputTokens: 20,
        cachedInputTokens: 1536,
        cacheWriteTokens: 210,
        outputTokens: 95,
        reasoningTokens: 0,
      },
    },
  ),
);

describeProviderContract(
  replayHarness(
    'OpenAI-compatible chat_completions',
    'chat_completions',
    (p) => createChatCompletionsProvider(p, TEST_KEY),
    {
      text: 'final-answer',
      tool_call: 'tool-call',
      parallel_tool_calls: 'parallel-tool-calls',
      usage: 'openrouter-cost',
      transient: 'error-500',
      permanent: 'error-401',
      malformed: 'malformed-stream',
    },
    {
      text: 'The result is 391.',
      toolCall: {
        callId: 'chatcmpl-tool-3f8e2a1b9c4d4e6f8a0b1c2d3e4f5a6b',
        name: 'math.calculate',
        arguments: { expression: '17 * 23' },
      },
      parallelCallIds: [
        'chatcmpl-tool-aa11bb22cc33dd44ee55ff6600112233',
        'chatcmpl-tool-44556677889900aabbccddeeff001122',
      ],
      usage: {
        uncachedInputTokens: 14,
        cachedInputTokens: 0,
        cacheWriteTokens: 0,
        outputTokens: 52,
        reasoningTokens: 44,
      },
    },
  ),
);
