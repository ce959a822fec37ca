import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, readSse, startApi, type ApiHarness, type SseFrame } from '../api/api-harness';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { EVERYTHING, makeConfigDir } from './mcp-support';

// Issue 34 item 6 (ADR 0048), over the real HTTP API, worker and database, with real servers:
// server-everything's long-running operation reports progress, which reaches the run's SSE stream
// as transient `tool.call.progress` frames; the probe server's 5 MB result is stored whole as an
// artifact and the model gets an excerpt and the reference.
const PROBE = path.resolve(__dirname, '../../fixtures/mcp/probe-server.mjs');
const MCP_YAML = `
version: 1
servers:
  - id: everything
    transport: { type: stdio, command: '\${node}', args: ['${EVERYTHING}', 'stdio'] }
    call_timeout_seconds: 30
    tools:
      trigger-long-running-operation: { side_effect: read, risk: low, idempotency: read_only }
  - id: probe
    transport: { type: stdio, command: '\${node}', args: ['${PROBE}'] }
    max_output_bytes: 65536
    classification: { side_effect: read, risk: low, idempotency: read_only }
`;
const AGENT = `
id: mcp_demo
version: 1
name: MCP demo
instructions: Use the MCP tools when asked.
model_policy: demo
enabled_tools: [math.calculate]
mcp_servers: [everything, probe]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

let tdb: TestDb;
let h: ApiHarness;
let config: { dir: string; remove(): void };

beforeAll(async () => {
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': AGENT });
  tdb = await createTestDb();
  h = await startApi(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  config?.remove();
});

const TERMINAL = (f: SseFrame) => f.event === 'run.completed' || f.event === 'run.failed';

/** Posts `text` to a new session and returns every frame of its stream until the run ends. */
async function runOverSse(text: string): Promise<{ runId: string; sessionId: string; frames: SseFrame[] }> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
  const streaming = readSse(`${h.base}/v1/sessions/${s.body.id}/events`, {
    until: (f) => f.some(TERMINAL),
    timeoutMs: 60_000,
  });
  await new Promise((r) => setTimeout(r, 200));
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text }] },
  });
  expect(m.status).toBe(202);
  return { runId: m.body.run_id, sessionId: s.body.id, frames: await streaming };
}

describe('MCP progress and large results', () => {
  it('progress notifications become transient tool.call.progress frames on the run stream, never stored', async () => {
    const { runId, sessionId, frames } = await runOverSse(
      'call mcp.everything.trigger_long_running_operation with {"duration":2,"steps":4}',
    );
    expect(frames.filter(TERMINAL).at(-1)?.event).toBe('run.completed');
    const started = frames.find((f) => f.event === 'tool.call.started')!;
    const progress = frames.filter((f) => f.event === 'tool.call.progress');
    // Transient frames are best effort (ADR 0048): on a loaded machine the server's last notification
    // can be handled after the call's result, so 4 may come after the completion or not at all.
    const values = progress.map((f) => f.data.progress as number);
    expect(values.slice(0, 3)).toEqual([1, 2, 3]);
    expect(values.slice(3)).toEqual(values.length > 3 ? [4] : []);
    for (const f of progress) {
      expect(f.id).toBeUndefined();
      expect(f.data).toEqual({
        type: 'tool.call.progress',
        run_id: runId,
        invocation_id: started.data.payload.invocation_id,
        tool_name: 'mcp.everything.trigger_long_running_operation',
        progress: expect.any(Number),
        total: 4,
        message: null,
      });
    }
    // Each after the call's start; all but a late last one before its completion.
    const at = (f: SseFrame) => frames.indexOf(f);
    const completed = frames.find((f) => f.event === 'tool.call.completed')!;
    expect(progress.every((f) => at(f) > at(started))).toBe(true);
    expect(progress.slice(0, 3).every((f) => at(f) < at(completed))).toBe(true);
    const stored = await h.t.platform.store.listAfter(sessionId, 0, LOCAL_PRINCIPAL);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.map((e) => e.type)).not.toContain('tool.call.progress');
  });

  it('resource updates: watch_resource subscribes, each update is a transient frame, the answer is the new contents', async () => {
    // server-everything sends notifications/resources/updated for subscribed URIs every 5 s once toggled on.
    const toggle = h.t.platform.registry.get('mcp.everything.toggle_subscriber_updates')!;
    expect((await toggle.execute({}, { signal: new AbortController().signal } as never)).ok).toBe(true);
    const uri = 'demo://resource/static/document/features.md';
    const { runId, frames } = await runOverSse(
      `call mcp.everything.watch_resource with {"uri":"${uri}","timeout_seconds":20}`,
    );
    expect(frames.filter(TERMINAL).at(-1)?.event).toBe('run.completed');
    const started = frames.find((f) => f.event === 'tool.call.started')!;
    const updates = frames.filter((f) => f.event === 'tool.call.progress');
    expect(updates[0]?.data).toEqual({
      type: 'tool.call.progress',
      run_id: runId,
      invocation_id: started.data.payload.invocation_id,
      tool_name: 'mcp.everything.watch_resource',
      progress: 1,
      total: null,
      message: `resource updated: ${uri}`,
    });
    const completed = frames.find((f) => f.event === 'tool.call.completed')!;
    expect(frames.indexOf(updates[0])).toBeLessThan(frames.indexOf(completed));
    const result = JSON.stringify(completed.data.payload);
    expect(result).toContain('"updated":true');
    expect(result).toContain(uri);
  }, 60_000);

  it('a 5 MB result becomes an artifact whose SHA-256 verifies; the model gets an excerpt and the reference', async () => {
    const bytes = 5 * 1024 * 1024;
    const { frames } = await runOverSse(`call mcp.probe.big with {"bytes":${bytes}}`);
    expect(frames.filter(TERMINAL).at(-1)?.event).toBe('run.completed');
    const completed = frames.find((f) => f.event === 'tool.call.completed')!;
    const result = completed.data.payload.result as Record<string, unknown>;
    // What the model sees: a marked excerpt and the artifact's reference, within the tool's limit.
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(65536);
    expect(result).toMatchObject({
      truncated: true,
      marker: expect.stringMatching(
        /^\[truncated: \d+ bytes exceed the 65536-byte limit; the full result is artifact /,
      ),
      excerpt: expect.stringContaining('lorem ipsum'),
      artifact: { artifact_id: expect.any(String), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    const ref = result.artifact as { artifact_id: string; sha256: string; size_bytes: number };
    expect(result.marker).toContain(ref.artifact_id);
    // The model's next turn was given that reference (the demo model quotes what it got).
    const answer = frames.find((f) => f.event === 'assistant.message.completed')!;
    expect(answer.data.payload.text).toContain(ref.artifact_id);
    // The artifact is the whole result: its bytes hash to the reference, and the text inside it is
    // the server's whole body (the server put that body's own SHA-256 in its first line).
    const r = await fetch(`${h.base}/v1/artifacts/${ref.artifact_id}/content`);
    expect(r.status).toBe(200);
    const body = Buffer.from(await r.arrayBuffer());
    expect(body.length).toBe(ref.size_bytes);
    expect(createHash('sha256').update(body).digest('hex')).toBe(ref.sha256);
    const whole = JSON.parse(body.toString('utf8')) as { trust: string; data: { content: { text: string }[] } };
    expect(whole.trust).toBe('external_untrusted');
    const [first, ...rest] = whole.data.content[0].text.split('\n');
    const text = rest.join('\n');
    expect(text.length).toBe(bytes);
    expect(first).toBe(`sha256 ${createHash('sha256').update(text).digest('hex')}`);
  });
});
