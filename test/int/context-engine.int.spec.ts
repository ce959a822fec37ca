import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { Worker } from '../../src/runtime/worker';
import type { StoredEvent } from '../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { ContextEngine } from '../../src/context/engine';
import { inputs } from '../unit/context/support';
import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { TEST_KEY } from '../unit/model-gateway/support/profiles';
import { ReplayServer, type RecordedRequest } from '../unit/model-gateway/support/replay-server';

/**
 * The context engine through the real run loop, worker and event store, with the provider profiles
 * pointed at the replay server (the real SDKs send real request bodies, recorded here):
 * - Region A (system + tools) is byte-identical in every request of a session - across turns, a
 *   tool loop and compactions - and its SHA-256 is the same on every model.request.started;
 * - the Anthropic request carries cache_control after the system content, after the tool
 *   definitions and on the rolling window of recent messages;
 * - the OpenAI Responses request keeps `instructions` and `tools` byte-identical between turns;
 * - a session whose log holds an event this build cannot read fails the run naming that event.
 */

const KEY_VAR = 'AGENT_TEST_CONTEXT_KEY';
// About 1,300 tokens: above Anthropic's 1,024-token minimum for a cache breakpoint.
const INSTRUCTIONS = Array.from(
  { length: 60 },
  (_, i) => `Rule ${i + 1}: be precise, cite the tool result you used, and keep answers short and friendly.`,
).join('\n');
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let server: ReplayServer;
let configDir: string;

beforeAll(async () => {
  server = await ReplayServer.start();
  configDir = mkdtempSync(join(tmpdir(), 'context-config-'));
  cpSync(join(__dirname, '..', '..', 'config'), configDir, { recursive: true });
  rmSync(join(configDir, 'providers'), { recursive: true, force: true });
  mkdirSync(join(configDir, 'providers'));
  const caps = '{ tool_calling: true, parallel_tool_calls: true, streaming: true, reasoning: true }';
  writeFileSync(
    join(configDir, 'providers', 'registry.yaml'),
    'version: 1\nmodel_policies:\n  balanced: { profile: openai, model: default }\n',
  );
  writeFileSync(
    join(configDir, 'providers', 'openai.yaml'),
    `name: openai\nversion: 1\napi_mode: responses\nbase_url: ${server.origin}/v1\ncredential_env: ${KEY_VAR}\nmodels:\n  - id: gpt-5-mini\n    aliases: [default]\n    context_limit: 400000\n    capabilities: ${caps}\n    prices: { uncached_input: "0.25", cached_input: "0.025", output: "2.00" }\n`,
  );
  // A deliberately small window, so a handful of long turns must compact.
  writeFileSync(
    join(configDir, 'providers', 'anthropic.yaml'),
    `name: anthropic\nversion: 1\napi_mode: anthropic\nbase_url: ${server.origin}\ncredential_env: ${KEY_VAR}\nmodels:\n  - id: claude-sonnet-4-6\n    aliases: [default]\n    context_limit: 7000\n    capabilities: ${caps}\n    prices: { uncached_input: "3", cached_input: "0.30", cache_write: "3.75", output: "15" }\n`,
  );
  writeFileSync(
    join(configDir, 'agents', 'context_test.yaml'),
    [
      'id: context_test',
      'version: 1',
      'name: Context test',
      'instructions: |',
      ...INSTRUCTIONS.split('\n').map((l) => `  ${l}`),
      'model_policy: anthropic:default',
      'enabled_tools: [math.calculate, system.current_time]',
      'enabled_skills: []',
      'policy_profile: default',
      'limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, max_input_tokens: null, max_output_tokens: 1024, max_cost: null, deadline_seconds: 300 }',
      'metadata: {}',
      '',
    ].join('\n'),
  );
  process.env[KEY_VAR] = TEST_KEY;
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, {
    configDir,
    leaseSeconds: 3,
    pollIntervalMs: 200,
    defaultAgentId: 'context_test',
  });
  worker = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 200, drainMs: 5000 });
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

async function sessionEvents(sessionId: string): Promise<StoredEvent[]> {
  return t.platform.store.listAfter(sessionId, 0, LOCAL_PRINCIPAL, 100_000);
}

const longMessage = (i: number) =>
  `Message ${i}. ` + 'Here is some context about my project that you should keep in mind as we go on. '.repeat(40);

describe('Region A stays byte-stable (Anthropic, with compaction)', () => {
  let requests: RecordedRequest[];
  let events: StoredEvent[];

  beforeAll(async () => {
    server.enqueue('anthropic/tool-use-thinking', 'anthropic/final-answer-cached');
    const first = await t.submit('Always answer briefly. What is 17 multiplied by 23?');
    expect(await t.waitForTerminal(first.runId)).toBe('completed');
    for (let i = 2; i <= 7; i++) {
      server.enqueue('anthropic/final-answer-cached');
      const r = await t.submit(longMessage(i), {}, first.sessionId);
      expect(await t.waitForTerminal(r.runId)).toBe('completed');
    }
    requests = [...server.requests];
    events = await sessionEvents(first.sessionId);
  }, 120_000);

  it('records the same prefix hash on every request, across turns, a tool loop and compactions', () => {
    const started = events.flatMap((e) => (e.type === 'model.request.started' ? [e.data] : []));
    expect(started).toHaveLength(8);
    expect(new Set(started.map((s) => s.prefixHash)).size).toBe(1);
    expect(started.every((s) => s.context?.prefixEpoch === 1)).toBe(true);
    expect(started.some((s) => (s.context?.compactions ?? 0) > 0)).toBe(true);
    for (const s of started) expect(s.context!.total).toBeLessThanOrEqual(7000);
    expect(events.some((e) => e.type === 'context.compacted')).toBe(true);
    // A tool result was in the conversation of the second request.
    expect(requests[1].raw).toContain('tool_result');
  });

  it('sends byte-identical system content and tool definitions while the messages (Region B) differ', () => {
    const region = (r: RecordedRequest) => JSON.stringify({ system: r.json.system, tools: r.json.tools });
    for (const r of requests) expect(region(r)).toBe(region(requests[0]));
    const messages = requests.map((r) => JSON.stringify(r.json.messages));
    expect(new Set(messages).size).toBe(requests.length);
  });

  it('places cache_control after the system content, after the tool definitions and on recent messages', () => {
    for (const r of requests) {
      const system = r.json.system as { cache_control?: unknown }[];
      const tools = r.json.tools as { cache_control?: unknown }[];
      expect(system.at(-1)?.cache_control).toEqual({ type: 'ephemeral' });
      expect(tools.at(-1)?.cache_control).toEqual({ type: 'ephemeral' });
      expect(tools.slice(0, -1).every((x) => x.cache_control === undefined)).toBe(true);
      const messages = r.json.messages as { content: { cache_control?: unknown }[] }[];
      expect(messages.at(-1)?.content.at(-1)?.cache_control).toEqual({ type: 'ephemeral' });
    }
  });

  it('stores the compaction reference in the run checkpoint; a fresh engine resumes from it', async () => {
    // A run of the compacted session with a tool step: its step checkpoint carries the reference
    // (the runs above answered at once, and a run's terminal write has no checkpoint: ADR 0057).
    server.enqueue('anthropic/tool-use-thinking', 'anthropic/final-answer-cached');
    const tooled = await t.submit('And what is 17 multiplied by 23?', {}, events[0].sessionId);
    expect(await t.waitForTerminal(tooled.runId)).toBe('completed');
    const all = await sessionEvents(events[0].sessionId);
    const compactions = all.filter((e): e is StoredEvent<'context.compacted'> => e.type === 'context.compacted');
    const last = compactions.at(-1)!;
    const cp = await t.platform.checkpoints.latest(tooled.runId);
    const ref = cp!.state.context!;
    expect(ref).toMatchObject({
      compactionId: last.data.compactionId,
      coveredThroughSequence: last.data.coveredThroughSequence,
      workingState: last.data.workingState,
    });
    expect(ref.readAfterSequence).toBeGreaterThan(0);
    expect(ref.readAfterSequence).toBeLessThan(last.sequence);
    // Bounded: a reference, not the summary or the history.
    expect(JSON.stringify(cp!.state)).not.toContain(JSON.stringify(last.data.summary));

    // Another worker (a fresh engine over the real event store) resumes the run from the checkpoint.
    const from: number[] = [];
    const store = t.platform.store;
    const fresh = new ContextEngine({
      listAfter: (sessionId, sequence, principal, limit) => {
        from.push(sequence);
        return store.listAfter(sessionId, sequence, principal, limit);
      },
    });
    const run = (await t.platform.runs.get(tooled.runId, null))!;
    const built = await fresh.build({
      ...inputs(tooled.runId, run.userMessageId, { step: cp!.state.step + 1 }),
      sessionId: last.sessionId,
      model: { provider: 'anthropic', model: 'claude-sonnet-4-6', contextLimit: 7000 },
      resume: ref,
    });
    expect(from).toEqual([ref.readAfterSequence]);
    const first = built.request.conversation[0];
    expect(first.kind === 'user' && first.messageId).toBe(`context-summary-${ref.compactionId}`);
    expect(built.request.conversation.some((c) => c.kind === 'user' && c.messageId === run.userMessageId)).toBe(true);
    expect(built.checkpoint?.compactionId).toBe(ref.compactionId);
  });
});

describe('OpenAI Responses: the stable prefix is byte-identical between turns', () => {
  it('keeps instructions and tools identical and only appends to the input', async () => {
    server.enqueue('openai-responses/tool-call', 'openai-responses/final-answer', 'openai-responses/final-answer');
    const first = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'balanced' });
    expect(await t.waitForTerminal(first.runId)).toBe('completed');
    const second = await t.submit('And once more, please?', { modelPolicy: 'balanced' }, first.sessionId);
    expect(await t.waitForTerminal(second.runId)).toBe('completed');
    const [a, b, c] = server.requests;
    for (const r of [b, c]) {
      expect(JSON.stringify(r.json.instructions)).toBe(JSON.stringify(a.json.instructions));
      expect(JSON.stringify(r.json.tools)).toBe(JSON.stringify(a.json.tools));
    }
    // The serialized prefix (everything before `input`) is the same bytes in every request body.
    const before = (r: RecordedRequest) => r.raw.slice(0, r.raw.indexOf('"input"'));
    expect(before(c)).toBe(before(a));
    expect(JSON.stringify(c.json.input)).not.toBe(JSON.stringify(a.json.input));
    const started = (await sessionEvents(first.sessionId)).flatMap((e) =>
      e.type === 'model.request.started' ? [e.data] : [],
    );
    expect(new Set(started.map((s) => s.prefixHash)).size).toBe(1);
    expect(started.map((s) => s.context?.estimator)).toEqual([
      'tiktoken:o200k_base',
      'tiktoken:o200k_base',
      'tiktoken:o200k_base',
    ]);
  }, 60_000);
});

describe('bad history', () => {
  it('fails the run naming an event of the session it cannot read', async () => {
    server.enqueue('openai-responses/final-answer');
    const first = await t.submit('Hello', { modelPolicy: 'balanced' });
    expect(await t.waitForTerminal(first.runId)).toBe('completed');
    // The next message lands while no worker runs, and is corrupted before one claims it, the way
    // a bad migration or a foreign writer would leave it. (An event this process wrote itself is
    // already in its fold, from the write: only what the build reads from the log can be bad.)
    await worker.stop();
    const second = await t.submit('Again', { modelPolicy: 'balanced' }, first.sessionId);
    const c = new Client({ connectionString: tdb.url });
    await c.connect();
    let eventId: string;
    try {
      const row = await c.query<{ id: string }>(
        `UPDATE events SET payload_schema_version = 99 WHERE session_id = $1 AND run_id = $2 AND event_type = 'user.message.created' RETURNING id::text`,
        [first.sessionId, second.runId],
      );
      eventId = row.rows[0].id;
    } finally {
      await c.end();
    }
    worker = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 200, drainMs: 5000 });
    await worker.start();
    expect(await t.waitForTerminal(second.runId)).toBe('failed');
    const run = await t.platform.runs.get(second.runId, null);
    expect(run?.failure?.message).toContain(`event ${eventId}`);
    expect(run?.failure?.message).toMatch(/context build failed/);
    expect(server.requests).toHaveLength(1);
  }, 60_000);
});
