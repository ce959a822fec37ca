import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { presentEvent } from '../../../src/api/presenters';
import { formatEvent } from '../../../src/cli/format-event';
import { ResolveApprovalCommand } from '../../../src/application/approvals/commands';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { Worker } from '../../../src/runtime/worker';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { TEST_KEY } from '../../unit/model-gateway/support/profiles';
import { ReplayServer } from '../../unit/model-gateway/support/replay-server';

/**
 * Fallback models (issue 33 item 4, ADR 0046) through the real worker, run loop, adapters and event
 * store, against recorded provider responses over HTTP: a first profile that answers 429 (or 529
 * overloaded) for good, a policy whose `fallbacks` names a second profile on another server.
 */

const KEY_VAR = 'AGENT_TEST_FALLBACK_REPLAY_KEY';
const CAPS = '{ tool_calling: true, parallel_tool_calls: true, streaming: true, reasoning: true }';
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let openai: ReplayServer;
let anthropic: ReplayServer;
let local: ReplayServer;
let configDir: string;

beforeAll(async () => {
  [openai, anthropic, local] = await Promise.all([ReplayServer.start(), ReplayServer.start(), ReplayServer.start()]);
  configDir = mkdtempSync(join(tmpdir(), 'gateway-fallback-config-'));
  cpSync(join(__dirname, '..', '..', '..', 'config'), configDir, { recursive: true });
  const providers = join(configDir, 'providers');
  rmSync(providers, { recursive: true, force: true });
  mkdirSync(providers);
  writeFileSync(
    join(providers, 'registry.yaml'),
    'version: 1\nmodel_policies:\n' +
      '  resilient: { profile: openai, model: default, fallbacks: [local:default] }\n' +
      '  thinking: { profile: anthropic, model: default, fallbacks: ["local:default"] }\n',
  );
  writeFileSync(
    join(providers, 'openai.yaml'),
    `name: openai\nversion: 1\napi_mode: responses\nbase_url: ${openai.origin}/v1\ncredential_env: ${KEY_VAR}\nmodels:\n  - id: gpt-5-mini\n    aliases: [default]\n    capabilities: ${CAPS}\n    prices: { uncached_input: "0.25", cached_input: "0.025", output: "2.00" }\n`,
  );
  writeFileSync(
    join(providers, 'anthropic.yaml'),
    `name: anthropic\nversion: 1\napi_mode: anthropic\nbase_url: ${anthropic.origin}\ncredential_env: ${KEY_VAR}\nmodels:\n  - id: claude-sonnet-4-6\n    aliases: [default]\n    capabilities: ${CAPS}\n    thinking: { budget_tokens: 2048 }\n    prices: { uncached_input: "3", cached_input: "0.30", cache_write: "3.75", output: "15" }\n`,
  );
  writeFileSync(
    join(providers, 'local.yaml'),
    `name: local\nversion: 2\napi_mode: chat_completions\nbase_url: ${local.origin}/v1\ncredential_env: ${KEY_VAR}\nmodels:\n  - id: Qwen/Qwen3-8B\n    aliases: [default]\n    capabilities: ${CAPS}\n    prices: { uncached_input: "0.20", cached_input: "0.05", output: "0.60" }\n`,
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
  await Promise.all([openai?.close(), anthropic?.close(), local?.close()]);
  delete process.env[KEY_VAR];
  rmSync(configDir, { recursive: true, force: true });
});

beforeEach(() => [openai, anthropic, local].forEach((s) => s.reset()));

async function sql<R>(text: string, values: unknown[] = []): Promise<R[]> {
  const c = new Client({ connectionString: tdb.url });
  await c.connect();
  try {
    return (await c.query(text, values)).rows as R[];
  } finally {
    await c.end();
  }
}

type ModelCallRow = {
  step: number;
  attempt: number;
  provider: string;
  model: string;
  status: string;
  cost: string;
  cost_source: string | null;
};

function modelCalls(runId: string): Promise<ModelCallRow[]> {
  return sql<ModelCallRow>(
    `SELECT step_number AS step, attempt_number AS attempt, provider, model, status, cost::text AS cost, cost_source
       FROM model_calls WHERE run_id = $1 ORDER BY started_at, attempt_number`,
    [runId],
  );
}

describe('a model policy with fallbacks', () => {
  it('completes on the fallback when the first profile answers 429 for good, with fallback_from and the cost on the answering model', async () => {
    openai.always('openai-responses/error-429-short-retry');
    local.enqueue('chat-completions/final-answer');
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'resilient' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const run = await t.platform.runs.get(runId, null);
    expect(run?.finalText).toBe('The result is 391.');

    // The first model's whole retry budget (3 attempts) went to the rate-limited server; then one call to the fallback.
    expect(openai.requests.map((r) => [r.path, r.json.model])).toEqual(
      Array.from({ length: 3 }, () => ['/v1/responses', 'gpt-5-mini']),
    );
    expect(local.requests.map((r) => [r.path, r.json.model])).toEqual([['/v1/chat/completions', 'Qwen/Qwen3-8B']]);

    const events = await t.events(runId);
    const started = events.flatMap((e) => (e.type === 'model.request.started' ? [e] : []));
    expect(
      started.map((e) => [
        e.schemaVersion,
        e.data.step,
        e.data.attempt,
        e.data.provider,
        e.data.model,
        e.data.fallbackFrom,
      ]),
    ).toEqual([
      [4, 1, 1, 'openai', 'gpt-5-mini', null],
      [4, 1, 2, 'openai', 'gpt-5-mini', null],
      [4, 1, 3, 'openai', 'gpt-5-mini', null],
      [4, 1, 4, 'local', 'Qwen/Qwen3-8B', { provider: 'openai', model: 'gpt-5-mini', reason: 'rate_limited' }],
    ]);
    // The fallback call records the profile that routed it.
    expect(started[3].data).toMatchObject({ profileName: 'local', profileVersion: 2 });
    expect(
      events.flatMap((e) =>
        e.type === 'model.request.failed' ? [[e.data.attempt, e.data.errorCode, e.data.retryable]] : [],
      ),
    ).toEqual([
      [1, 'model_transient_error', true],
      [2, 'model_transient_error', true],
      [3, 'model_transient_error', true],
    ]);
    // The CLI's event line says so too (`agent run`, `agent chat`).
    expect(formatEvent(started[3])).toContain(
      'local:Qwen/Qwen3-8B · attempt 4 · fallback from openai:gpt-5-mini (rate_limited)',
    );
    // On the wire (events API and SSE), payload keys are snake_case.
    expect(presentEvent(started[3]).payload).toMatchObject({
      fallback_from: { provider: 'openai', model: 'gpt-5-mini', reason: 'rate_limited' },
    });

    // Cost: (34×0.20 + 256×0.05 + 7×0.60) / 1e6 at the answering model's catalog price; the failed calls cost nothing.
    const completed = events.flatMap((e) => (e.type === 'model.response.completed' ? [e.data] : []));
    expect(completed.map((d) => [d.attempt, d.cost, d.costSource])).toEqual([[4, '0.0000238', 'catalog_price']]);
    expect(await modelCalls(runId)).toEqual([
      { step: 1, attempt: 1, provider: 'openai', model: 'gpt-5-mini', status: 'failed', cost: '0', cost_source: null },
      { step: 1, attempt: 2, provider: 'openai', model: 'gpt-5-mini', status: 'failed', cost: '0', cost_source: null },
      { step: 1, attempt: 3, provider: 'openai', model: 'gpt-5-mini', status: 'failed', cost: '0', cost_source: null },
      {
        step: 1,
        attempt: 4,
        provider: 'local',
        model: 'Qwen/Qwen3-8B',
        status: 'succeeded',
        cost: '0.0000238',
        cost_source: 'catalog_price',
      },
    ]);
    expect(run?.usage).toMatchObject({ cost: '0.0000238', modelCalls: 4, outputTokens: 7 });
  });

  it('moves mid-loop on an overloaded provider and never sends its reasoning continuation to the fallback', async () => {
    anthropic.enqueue('anthropic/thinking-signature-tool-use').always('anthropic/error-529');
    local.enqueue('chat-completions/final-answer');
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'thinking' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    expect((await t.platform.runs.get(runId, null))?.finalText).toBe('The result is 391.');
    // Step 1 answered by Anthropic (a tool call with signed thinking); step 2 overloaded three times.
    expect(anthropic.requests).toHaveLength(4);
    expect(local.requests).toHaveLength(1);

    // The fallback's request is rebuilt from the portable history: the tool call and its result, no thinking.
    const body = local.requests[0];
    expect(body.raw).not.toMatch(/RAW-THINKING|signature|redacted_thinking/);
    type Msg = {
      role: string;
      tool_calls?: { id: string; function: { name: string } }[];
      tool_call_id?: string;
      content?: unknown;
    };
    const messages = body.json.messages as Msg[];
    const call = messages.find((m) => m.role === 'assistant' && m.tool_calls)?.tool_calls?.[0];
    expect(call?.function.name).toBe('math_calculate');
    const result = messages.find((m) => m.role === 'tool');
    expect(result?.tool_call_id).toBe(call?.id);
    expect(String(result?.content)).toContain('391');

    const started = (await t.events(runId)).flatMap((e) => (e.type === 'model.request.started' ? [e.data] : []));
    expect(started.map((d) => [d.step, d.attempt, d.provider, d.fallbackFrom?.reason ?? null])).toEqual([
      [1, 1, 'anthropic', null],
      [2, 1, 'anthropic', null],
      [2, 2, 'anthropic', null],
      [2, 3, 'anthropic', null],
      [2, 4, 'local', 'overloaded'],
    ]);
    // Each answer is priced by the model that gave it; the run's cost is their sum.
    const answered = (await modelCalls(runId)).filter((r) => r.status === 'succeeded');
    expect(answered.map((r) => [r.step, r.provider, r.cost_source])).toEqual([
      [1, 'anthropic', 'catalog_price'],
      [2, 'local', 'catalog_price'],
    ]);
    expect(answered[1].cost).toBe('0.0000238');
    const [{ total }] = await sql<{ total: string }>(
      'SELECT sum(cost)::text AS total FROM model_calls WHERE run_id = $1',
      [runId],
    );
    expect(Number((await t.platform.runs.get(runId, null))?.usage.cost)).toBeCloseTo(Number(total), 12);
  });

  it('stays on the fallback after a suspension: the next lease resumes on it from the log', async () => {
    openai.always('openai-responses/error-429-short-retry');
    local.enqueue('chat-completions/external-write-tool-call', 'chat-completions/final-answer');
    const { runId } = await t.submit('send hello to the newsletter', { modelPolicy: 'resilient' });
    const deadline = Date.now() + 20_000;
    let approval = (await t.platform.toolRecords.pendingApprovalsOfRun(runId))[0];
    while (!approval && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      approval = (await t.platform.toolRecords.pendingApprovalsOfRun(runId))[0];
    }
    expect((await t.platform.runs.get(runId, null))?.status).toBe('waiting_for_approval');
    await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'approve_once', null));
    expect(await t.waitForTerminal(runId)).toBe('completed');

    // The rate-limited model got its three attempts in step 1 and nothing after the resume.
    expect(openai.requests).toHaveLength(3);
    expect(local.requests).toHaveLength(2);
    const events = await t.events(runId);
    expect(events.filter((e) => e.type === 'run.claimed')).toHaveLength(2);
    const from = { provider: 'openai', model: 'gpt-5-mini', reason: 'rate_limited' };
    const started = events.flatMap((e) => (e.type === 'model.request.started' ? [e.data] : []));
    expect(started.map((d) => [d.step, d.attempt, d.provider, d.fallbackFrom])).toEqual([
      [1, 1, 'openai', null],
      [1, 2, 'openai', null],
      [1, 3, 'openai', null],
      [1, 4, 'local', from],
      [2, 1, 'local', from],
    ]);
  });

  it('fails as before when the fallback is rate-limited too (no model left)', async () => {
    openai.always('openai-responses/error-429-short-retry');
    local.always('chat-completions/error-429');
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'resilient' });
    expect(await t.waitForTerminal(runId, 40_000)).toBe('failed');
    const run = await t.platform.runs.get(runId, null);
    expect(run?.failure).toMatchObject({ reason: 'model_transient_exhausted' });
    expect([openai.requests.length, local.requests.length]).toEqual([3, 3]);
  });
});
