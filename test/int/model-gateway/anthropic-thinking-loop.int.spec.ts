import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { Worker } from '../../../src/runtime/worker';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { TEST_KEY } from '../../unit/model-gateway/support/profiles';
import { loadRecording, ReplayServer } from '../../unit/model-gateway/support/replay-server';

/**
 * Anthropic extended thinking across a tool loop, through the real run loop, worker and event
 * store: the first response streams signed thinking (and redacted thinking) then a tool_use for
 * math.calculate; the request the SDK sends after the tool ran must carry those blocks back
 * verbatim at the start of the assistant turn, with thinking still enabled (plan §10.6), while
 * the event log never holds any of the reasoning.
 */

const KEY_VAR = 'AGENT_TEST_THINKING_REPLAY_KEY';
const BUDGET = 2048;
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let server: ReplayServer;
let configDir: string;

beforeAll(async () => {
  server = await ReplayServer.start();
  configDir = mkdtempSync(join(tmpdir(), 'gateway-thinking-config-'));
  cpSync(join(__dirname, '..', '..', '..', 'config'), configDir, { recursive: true });
  rmSync(join(configDir, 'providers'), { recursive: true, force: true });
  mkdirSync(join(configDir, 'providers'));
  writeFileSync(
    join(configDir, 'providers', 'registry.yaml'),
    'version: 1\nmodel_policies:\n  claude: { profile: anthropic, model: default }\n',
  );
  writeFileSync(
    join(configDir, 'providers', 'anthropic.yaml'),
    `name: anthropic\nversion: 1\napi_mode: anthropic\nbase_url: ${server.origin}\ncredential_env: ${KEY_VAR}\nmodels:\n  - id: claude-sonnet-4-6\n    aliases: [default]\n    capabilities: { tool_calling: true, parallel_tool_calls: true, streaming: true, reasoning: true }\n    thinking: { budget_tokens: ${BUDGET} }\n    prices: { uncached_input: "3", cached_input: "0.30", cache_write: "3.75", output: "15" }\n`,
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

type Block = Record<string, unknown> & { type: string };

/**
 * The content blocks exactly as a recording streams them, rebuilt from its SSE events independently
 * of the adapter: each block as `content_block_start` opens it, with thinking / signature / JSON deltas
 * appended in order. Also returns every raw thinking chunk, for the event-log scan.
 */
function streamedBlocks(name: string): { blocks: Block[]; thinkingChunks: string[] } {
  const blocks: Block[] = [];
  const json: string[] = [];
  const thinkingChunks: string[] = [];
  for (const line of loadRecording(name).body.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const e = JSON.parse(line.slice(6)) as {
      type: string;
      index?: number;
      content_block?: Block;
      delta?: Record<string, string>;
    };
    if (e.type === 'content_block_start') {
      blocks[e.index!] = { ...e.content_block! };
      json[e.index!] = '';
    } else if (e.type === 'content_block_delta') {
      const b = blocks[e.index!];
      const d = e.delta!;
      if (d.type === 'thinking_delta') {
        b.thinking = `${b.thinking as string}${d.thinking}`;
        thinkingChunks.push(d.thinking);
      } else if (d.type === 'signature_delta') b.signature = `${b.signature as string}${d.signature}`;
      else if (d.type === 'text_delta') b.text = `${b.text as string}${d.text}`;
      else if (d.type === 'input_json_delta') json[e.index!] += d.partial_json;
    } else if (e.type === 'content_block_stop') {
      const b = blocks[e.index!];
      if (b.type === 'tool_use' && json[e.index!] !== '') b.input = JSON.parse(json[e.index!]);
    }
  }
  return { blocks, thinkingChunks };
}

/** Every string inside a JSON value (decoded), so an escaped secret cannot hide in the scan. */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => [k, ...stringsIn(v)]);
  return [];
}

type Message = { role: 'user' | 'assistant'; content: Block[] };

describe.each([
  { title: 'a signed thinking block', fixture: 'anthropic/thinking-signature-tool-use', reasoningTypes: ['thinking'] },
  {
    title: 'a signed thinking block and a redacted_thinking block',
    fixture: 'anthropic/tool-use-thinking',
    reasoningTypes: ['thinking', 'redacted_thinking'],
  },
])('an Anthropic tool loop whose first response streams $title', ({ fixture, reasoningTypes }) => {
  it('sends the reasoning back verbatim before the tool_use, with thinking still on, and never logs it', async () => {
    const { blocks, thinkingChunks } = streamedBlocks(fixture);
    const reasoning = blocks.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking');
    const toolUse = blocks.find((b) => b.type === 'tool_use')!;
    // The recording is what this test claims it is.
    expect(reasoning.map((b) => b.type)).toEqual(reasoningTypes);
    expect(reasoning[0].signature).toMatch(/^[A-Za-z0-9+/]{40,}=*$/);
    expect(toolUse).toMatchObject({ name: 'math_calculate', input: { expression: '17 * 23' } });

    server.enqueue(fixture, 'anthropic/final-answer-cached');
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'claude' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    expect((await t.platform.runs.get(runId, null))?.finalText).toBe('The result is 391.');
    expect(server.pending).toBe(0);
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/messages', '/v1/messages']);
    const [first, second] = server.requests;
    expect(first.json.thinking).toEqual({ type: 'enabled', budget_tokens: BUDGET });

    // The follow-up request: thinking was not turned off for lack of continuity.
    expect(second.json.thinking).toEqual({ type: 'enabled', budget_tokens: BUDGET });
    expect(second.json.max_tokens).toBeGreaterThan(BUDGET);
    expect(second.json.temperature).toBeUndefined();
    const messages = second.json.messages as Message[];
    const a = messages.map((m) => m.role).lastIndexOf('assistant');
    expect(a).toBeGreaterThan(0);
    const assistant = messages[a];
    // Begins with the reasoning blocks exactly as streamed (type, thinking, signature / data) ...
    expect(assistant.content.slice(0, reasoning.length)).toEqual(reasoning);
    // ... then the tool_use with the streamed id (no text of the tool turn in between, and nothing after).
    expect(assistant.content.slice(reasoning.length)).toEqual([
      {
        type: 'tool_use',
        id: toolUse.id,
        name: 'math_calculate',
        input: { expression: '17 * 23' },
        // The context engine's rolling cache window ends on this turn's last block (ADR 0017).
        cache_control: { type: 'ephemeral' },
      },
    ]);
    // Byte-identical on the wire: the exact JSON encoding of every streamed value (thinking text with its
    // escapes and non-ASCII, signature, redacted data) is in the body. Key order is not compared: the
    // continuation round-trips through the jsonb checkpoint, and JSON member order means nothing to the API.
    for (const block of reasoning) {
      for (const value of Object.values(block)) expect(second.raw).toContain(JSON.stringify(value));
    }
    // The next user message answers that tool_use.
    expect(messages.slice(a + 1).map((m) => m.role)).toEqual(['user']);
    const [result, ...rest] = messages[a + 1].content;
    expect(rest).toEqual([]);
    expect(result).toMatchObject({ type: 'tool_result', tool_use_id: toolUse.id });
    expect(String(result.content)).toContain('391');
    expect(result.is_error).toBeUndefined();

    // The continuation lived in the checkpoints only while the loop went on, and not past the answer.
    const checkpoints = await sql<{
      state: {
        step: number;
        phase: string;
        providerContinuation: { provider: string; items: { opaquePayload: unknown }[] } | null;
      };
    }>('SELECT state FROM checkpoints WHERE run_id = $1 ORDER BY version', [runId]);
    expect(checkpoints.map((c) => [c.state.step, c.state.phase])).toEqual([
      // The tool-calling response's checkpoint commits with the tool result's, which supersedes it,
      // and the terminal write has none (ADR 0057): the continuation reached the follow-up request
      // through the tools_completed checkpoint, which carries it on.
      [1, 'tools_completed'],
    ]);
    // During the loop the blocks came from the checkpoints (the follow-up request above is built from
    // the latest checkpoint's providerContinuation); once the run finished they were dropped from every
    // stored checkpoint, so no thinking text outlives the loop (plan §10.6).
    for (const c of checkpoints) expect(c.state.providerContinuation).toBeNull();

    // No reasoning in the event log: not the thinking text, any streamed chunk of it, a signature or redacted data.
    const rows = await sql<{ payload: unknown; text: string }>('SELECT payload, payload::text AS text FROM events');
    expect(rows.length).toBeGreaterThan(0);
    const haystack = rows.flatMap((r) => [r.text, ...stringsIn(r.payload)]).join('\n');
    const needles = [
      ...reasoning.flatMap((b) =>
        b.type === 'thinking' ? [b.thinking as string, b.signature as string] : [b.data as string],
      ),
      ...thinkingChunks.filter((c) => c.trim().length >= 12),
    ];
    expect(needles.length).toBeGreaterThan(reasoning.length);
    for (const needle of needles) expect(haystack).not.toContain(needle);
  });
});
