import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { ModelProvider, ProviderUsageApi, UsageApiQuery } from '../../../src/ports/model-provider';
import type { Worker } from '../../../src/runtime/worker';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { TEST_KEY } from '../../unit/model-gateway/support/profiles';
import { ReplayServer } from '../../unit/model-gateway/support/replay-server';

/**
 * The calculator scenario through the chat_completions adapter (and, for the tool-call ids, through
 * Anthropic) in the real run loop, worker and event store, against recorded SSE; plus every step
 * of the cost precedence (plan §6.5) as recorded by the run loop, and the profile and registry
 * versions on model.request.started (v2+) and in model_calls.
 */

const KEY_VAR = 'AGENT_TEST_PRICING_REPLAY_KEY';
const CHAT_CALL_ID = 'chatcmpl-tool-3f8e2a1b9c4d4e6f8a0b1c2d3e4f5a6b';
const ANTHROPIC_CALL_ID = 'toolu_01Mq8Zt4Xb7Nv2Kp5Rw9Yc3L';
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let server: ReplayServer;
let configDir: string;

beforeAll(async () => {
  server = await ReplayServer.start();
  configDir = mkdtempSync(join(tmpdir(), 'gateway-pricing-config-'));
  cpSync(join(__dirname, '..', '..', '..', 'config'), configDir, { recursive: true });
  rmSync(join(configDir, 'providers'), { recursive: true, force: true });
  mkdirSync(join(configDir, 'providers'));
  const caps = '{ tool_calling: true, parallel_tool_calls: true, streaming: true, reasoning: true }';
  writeFileSync(join(configDir, 'providers', 'registry.yaml'), 'version: 3\nmodel_policies: {}\n');
  // "Qwen/Qwen3-8B" has no prices of its own (snapshot); "qwen-override" only a price_override;
  // "qwen-catalog" its own prices (and an override that must lose).
  writeFileSync(
    join(configDir, 'providers', 'local.yaml'),
    `name: local\nversion: 5\napi_mode: chat_completions\nbase_url: ${server.origin}/v1\ncredential_env: ${KEY_VAR}\nmodels:\n` +
      `  - id: Qwen/Qwen3-8B\n    aliases: [default]\n    capabilities: ${caps}\n` +
      `  - id: qwen-override\n    capabilities: ${caps}\n    price_override: { uncached_input: "1", cached_input: "0.5", output: "2" }\n` +
      `  - id: qwen-catalog\n    capabilities: ${caps}\n    prices: { uncached_input: "0.1", cached_input: "0.1", output: "0.1" }\n    price_override: { uncached_input: "9", cached_input: "9", output: "9" }\n`,
  );
  writeFileSync(
    join(configDir, 'providers', 'pricing-snapshot.yaml'),
    'version: 2\nas_of: "2025-10-15"\nprices:\n  local/Qwen/Qwen3-8B: { uncached_input: "0.20", cached_input: "0.05", output: "0.60" }\n',
  );
  writeFileSync(
    join(configDir, 'providers', 'anthropic.yaml'),
    `name: anthropic\nversion: 2\napi_mode: anthropic\nbase_url: ${server.origin}\ncredential_env: ${KEY_VAR}\nmodels:\n  - id: claude-sonnet-4-6\n    aliases: [default]\n    capabilities: ${caps}\n    thinking: { budget_tokens: 2048 }\n    prices: { uncached_input: "3", cached_input: "0.30", cache_write: "3.75", output: "15" }\n`,
  );
  process.env[KEY_VAR] = TEST_KEY;
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { configDir, leaseSeconds: 3, pollIntervalMs: 200 });
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 200, drainMs: 5000 });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
  await server?.close();
  delete process.env[KEY_VAR];
  rmSync(configDir, { recursive: true, force: true });
});

beforeEach(() => server.reset());

async function sql<R>(text: string, values: unknown[] = []): Promise<R[]> {
  const c = new Client({ connectionString: tdb.url });
  await c.connect();
  try {
    return (await c.query(text, values)).rows as R[];
  } finally {
    await c.end();
  }
}

async function costs(runId: string): Promise<[string, string][]> {
  const events = await t.events(runId);
  return events.flatMap((e) => (e.type === 'model.response.completed' ? [[e.data.cost, e.data.costSource]] : []));
}

type ChatMessage = { role: string; tool_calls?: { id: string; function: { name: string } }[]; tool_call_id?: string };

describe('the calculator scenario through the chat_completions adapter', () => {
  it('completes with the tool-call id preserved end to end, priced from the pricing snapshot', async () => {
    server.enqueue('chat-completions/tool-call', 'chat-completions/final-answer');
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'local:default' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const run = await t.platform.runs.get(runId, null);
    expect(run?.finalText).toBe('The result is 391.');
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
    expect(server.requests[0].json.model).toBe('Qwen/Qwen3-8B');

    const events = await t.events(runId);
    const proposed = events.find((e) => e.type === 'tool.call.proposed');
    expect(proposed?.type === 'tool.call.proposed' && [proposed.data.callId, proposed.data.toolName]).toEqual([
      CHAT_CALL_ID,
      'math.calculate',
    ]);
    const completedCalls = events.flatMap((e) => (e.type === 'model.response.completed' ? e.data.toolCalls : []));
    expect(completedCalls).toEqual([{ callId: CHAT_CALL_ID, name: 'math.calculate' }]);
    // The follow-up request carries the same id on the assistant's tool call and on the tool result.
    const messages = server.requests[1].json.messages as ChatMessage[];
    const assistant = messages.find((m) => m.role === 'assistant' && m.tool_calls);
    expect(assistant?.tool_calls?.map((c) => [c.id, c.function.name])).toEqual([[CHAT_CALL_ID, 'math_calculate']]);
    const tool = messages.find((m) => m.role === 'tool') as ChatMessage & { content: string };
    expect(tool.tool_call_id).toBe(CHAT_CALL_ID);
    expect(tool.content).toContain('391');

    // (44×0.20 + 192×0.05 + 26×0.60) / 1e6 and (34×0.20 + 256×0.05 + 7×0.60) / 1e6
    expect(await costs(runId)).toEqual([
      ['0.000034', 'pricing_snapshot'],
      ['0.0000238', 'pricing_snapshot'],
    ]);
    expect(run?.usage.cost).toBe('0.0000578');
  });

  it('records the profile and registry versions on model.request.started (v2+) and in model_calls', async () => {
    server.enqueue('chat-completions/final-answer');
    const { runId } = await t.submit('Say the answer.', { modelPolicy: 'local:default' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const registryVersion = t.platform.router.registry.version;
    expect(registryVersion).toMatch(/^r3-[0-9a-f]{12}$/);
    const started = (await t.events(runId)).filter((e) => e.type === 'model.request.started');
    expect(started.map((e) => [e.schemaVersion, e.data])).toEqual([
      [4, expect.objectContaining({ profileName: 'local', profileVersion: 5, registryVersion, fallbackFrom: null })],
    ]);
    const raw = await sql<{ v: number }>(
      `SELECT payload_schema_version AS v FROM events WHERE run_id = $1 AND event_type = 'model.request.started'`,
      [runId],
    );
    expect(raw).toEqual([{ v: 4 }]); // v3 (issue #11) adds the context build record, v4 fallbackFrom (ADR 0046)
    expect(
      await sql(`SELECT profile_name, profile_version, registry_version FROM model_calls WHERE run_id = $1`, [runId]),
    ).toEqual([{ profile_name: 'local', profile_version: 5, registry_version: registryVersion }]);

    // The offline providers are routed by no profile.
    const demo = await t.submit('What is 2 + 2?', { modelPolicy: 'demo' });
    expect(await t.waitForTerminal(demo.runId)).toBe('completed');
    const rows = await sql(
      `SELECT profile_name, profile_version, registry_version FROM model_calls WHERE run_id = $1`,
      [demo.runId],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r).toEqual({ profile_name: null, profile_version: null, registry_version: null });
  });
});

describe('the cost precedence, as recorded by the run loop (plan §6.5)', () => {
  it('catalog price beats the configured override', async () => {
    server.enqueue('chat-completions/final-answer');
    const { runId } = await t.submit('hi', { modelPolicy: 'local:qwen-catalog' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    // (34 + 256 + 7) × 0.1 / 1e6
    expect(await costs(runId)).toEqual([['0.0000297', 'catalog_price']]);
  });

  it('the configured override prices a model nothing else prices', async () => {
    server.enqueue('chat-completions/final-answer');
    const { runId } = await t.submit('hi', { modelPolicy: 'local:qwen-override' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    // (34×1 + 256×0.5 + 7×2) / 1e6
    expect(await costs(runId)).toEqual([['0.000176', 'config_override']]);
    const rows = await sql(`SELECT cost::text, cost_source FROM model_calls WHERE run_id = $1`, [runId]);
    expect(rows).toEqual([{ cost: '0.000176', cost_source: 'config_override' }]);
  });

  it('a provider usage API, when an adapter has one, beats the catalog price; a failing one falls through', async () => {
    const provider = t.platform.router.resolve('local:qwen-catalog').provider as ModelProvider & {
      usageApi?: ProviderUsageApi;
    };
    const queries: UsageApiQuery[] = [];
    try {
      provider.usageApi = {
        costOf: (q) => {
          queries.push(q);
          return Promise.resolve('0.0123');
        },
      };
      server.enqueue('chat-completions/final-answer');
      const first = await t.submit('hi', { modelPolicy: 'local:qwen-catalog' });
      expect(await t.waitForTerminal(first.runId)).toBe('completed');
      expect(await costs(first.runId)).toEqual([['0.0123', 'provider_usage_api']]);
      expect(queries[0]).toMatchObject({
        model: { provider: 'local', model: 'qwen-catalog', profileVersion: 5 },
        usage: { uncachedInputTokens: 34, cachedInputTokens: 256, outputTokens: 7 },
      });

      provider.usageApi = { costOf: () => Promise.reject(new Error('usage API down')) };
      server.enqueue('chat-completions/final-answer');
      const second = await t.submit('hi', { modelPolicy: 'local:qwen-catalog' });
      expect(await t.waitForTerminal(second.runId)).toBe('completed');
      expect(await costs(second.runId)).toEqual([['0.0000297', 'catalog_price']]);
    } finally {
      delete provider.usageApi;
    }
  });

  it('a cost reported on the response beats everything (OpenRouter usage.cost)', async () => {
    const provider = t.platform.router.resolve('local:default').provider as ModelProvider & {
      usageApi?: ProviderUsageApi;
    };
    try {
      provider.usageApi = { costOf: () => Promise.resolve('0.9') };
      server.enqueue('chat-completions/openrouter-cost');
      const { runId } = await t.submit('hi', { modelPolicy: 'local:default' });
      expect(await t.waitForTerminal(runId)).toBe('completed');
      expect((await costs(runId)).map(([, source]) => source)).toEqual(['provider_response']);
    } finally {
      delete provider.usageApi;
    }
  });
});

describe('the calculator scenario through the Anthropic adapter', () => {
  it('preserves the tool_use id from the stream to the event log to the tool_result sent back', async () => {
    server.enqueue('anthropic/tool-use-thinking', 'anthropic/final-answer-cached');
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'anthropic:default' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    expect((await t.platform.runs.get(runId, null))?.finalText).toBe('The result is 391.');
    const events = await t.events(runId);
    const proposed = events.find((e) => e.type === 'tool.call.proposed');
    expect(proposed?.type === 'tool.call.proposed' && [proposed.data.callId, proposed.data.toolName]).toEqual([
      ANTHROPIC_CALL_ID,
      'math.calculate',
    ]);
    const messages = server.requests[1].json.messages as { role: string; content: Record<string, unknown>[] }[];
    const toolUse = messages
      .flatMap((m) => (m.role === 'assistant' ? m.content : []))
      .find((b) => b.type === 'tool_use');
    expect(toolUse).toMatchObject({ id: ANTHROPIC_CALL_ID, name: 'math_calculate' });
    const result = messages.flatMap((m) => (m.role === 'user' ? m.content : [])).find((b) => b.type === 'tool_result');
    expect(result).toMatchObject({ tool_use_id: ANTHROPIC_CALL_ID });
    expect(await costs(runId)).toEqual([
      [expect.any(String), 'catalog_price'],
      ['0.0027333', 'catalog_price'],
    ]);
  });
});
