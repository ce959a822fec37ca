import Decimal from 'decimal.js';
import { join } from 'node:path';
import { bindProfiles, loadProviderRegistry } from '../../src/adapters/model/profiles';
import { assembleTurn } from '../../src/domain/model/assembler';
import type { ModelRequest } from '../../src/domain/model/model-events';
import { priceModelCall } from '../../src/domain/run/usage';
import { ModelRouter } from '../../src/runtime/model-router';

/**
 * Live provider tests: skipped unless RUN_LIVE_MODEL_TESTS=1. Each provider runs only when its key
 * (or, for the local profile, LIVE_LOCAL_MODEL=1) is set. Ceilings: at most MAX_CALLS model calls
 * and MAX_COST dollars across the file; a test that would exceed either fails instead of calling.
 *
 *   RUN_LIVE_MODEL_TESTS=1 OPENAI_API_KEY=... ANTHROPIC_API_KEY=... npx jest test/live
 *   RUN_LIVE_MODEL_TESTS=1 LIVE_LOCAL_MODEL=1 OLLAMA_BASE_URL=http://127.0.0.1:11434/v1 npx jest test/live
 */
const LIVE = process.env.RUN_LIVE_MODEL_TESTS === '1';
const MAX_CALLS = Number(process.env.LIVE_MAX_CALLS ?? 8);
const MAX_COST = new Decimal(process.env.LIVE_MAX_COST ?? '0.05');
let calls = 0;
let spent = new Decimal(0);

const registry = loadProviderRegistry(join(__dirname, '..', '..', 'config', 'providers'), process.env);
const router = new ModelRouter([], { registry, bindings: bindProfiles(registry, process.env) });

function request(text: string, conversation: ModelRequest['conversation'] = []): ModelRequest {
  return {
    modelPolicy: 'live',
    system: 'You are a terse assistant. Use math_calculate for arithmetic.',
    tools: [
      {
        name: 'math.calculate',
        description: 'Evaluates an arithmetic expression.',
        inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
      },
    ],
    conversation: [{ kind: 'user', messageId: 'live-1', content: [{ type: 'text', text }] }, ...conversation],
    maximumOutputTokens: 2048,
    temperature: null,
    cacheHints: [],
    prefixHash: '0'.repeat(64),
    metadata: { step: '1', run_id: 'live', attempt_id: 'live' },
  };
}

async function call(policy: string, req: ModelRequest) {
  if (calls >= MAX_CALLS) throw new Error(`live call ceiling (${MAX_CALLS}) reached`);
  if (spent.greaterThanOrEqualTo(MAX_COST)) throw new Error(`live cost ceiling (${MAX_COST.toString()}) reached`);
  calls += 1;
  const route = router.resolve(policy, { toolCalling: true });
  const turn = await assembleTurn(
    route.provider.stream(req, route.model, {
      attemptId: `live-${calls}`,
      attemptNumber: 1,
      deadlineMs: Date.now() + 120_000,
    }),
  );
  spent = spent.plus(priceModelCall(turn.usage, turn.providerCost, route.billing).cost);
  return turn;
}

const cases: [string, string, boolean][] = [
  ['OpenAI Responses', 'openai:default', Boolean(process.env.OPENAI_API_KEY)],
  ['Anthropic Messages', 'anthropic:default', Boolean(process.env.ANTHROPIC_API_KEY)],
  ['OpenAI-compatible (local)', 'ollama:default', process.env.LIVE_LOCAL_MODEL === '1'],
];

describe('live model providers', () => {
  if (!LIVE) {
    it.skip('are skipped unless RUN_LIVE_MODEL_TESTS=1', () => undefined);
    return;
  }
  afterAll(() => {
    console.log(`live model tests: ${calls} calls, $${spent.toFixed()} spent`);
  });
  for (const [label, policy, enabled] of cases) {
    (enabled ? it : it.skip)(
      `${label}: calls the calculator tool and answers after the result`,
      async () => {
        const first = await call(policy, request('What is 17 multiplied by 23? Use the tool.'));
        expect(first.toolCalls.length).toBeGreaterThan(0);
        const c = first.toolCalls[0];
        const second = await call(
          policy,
          request('What is 17 multiplied by 23? Use the tool.', [
            ...first.reasoningItems,
            c,
            {
              kind: 'tool_result',
              callId: c.callId,
              name: c.name,
              output: { value: 391 },
              isError: false,
              trust: 'tool_untrusted',
            },
          ]),
        );
        expect(second.text).toContain('391');
        expect(second.usage.uncachedInputTokens + second.usage.cachedInputTokens).toBeGreaterThan(0);
      },
      180_000,
    );
  }
});
