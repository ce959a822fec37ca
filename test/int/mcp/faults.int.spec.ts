import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import type { Worker } from '../../../src/runtime/worker';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { capturingLogger, EVERYTHING, makeConfigDir, MCP_AGENT } from './mcp-support';

// The real server-everything over stdio, (a) behind a pipe that corrupts or swallows chosen
// responses, and (b) given a credential through its env allowlist. Through the real run loop.
const FAULTY = path.resolve(__dirname, '../../fixtures/mcp/faulty-pipe.mjs');
const SECRET = `s3cr3t-${Math.random().toString(36).slice(2)}-value`;
const MCP_YAML = `
version: 1
servers:
  - id: everything
    transport:
      type: stdio
      command: \${node}
      args: ['${FAULTY}', '${EVERYTHING}']
    call_timeout_seconds: 2
    max_output_bytes: 1024
    classification: { side_effect: read, risk: low, idempotency: read_only }
  - id: keyed
    transport:
      type: stdio
      command: \${node}
      args: ['${EVERYTHING}', 'stdio']
      env_allowlist: [MCP_FAULTS_API_KEY]
    classification: { side_effect: read, risk: low, idempotency: read_only }
`;

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let config: { dir: string; remove(): void };
const log = capturingLogger();

const dataOf = (events: StoredEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);

async function runText(text: string) {
  const { runId } = await t.submit(text);
  const status = await t.waitForTerminal(runId, 30_000);
  return { status, events: await t.events(runId) };
}

beforeAll(async () => {
  process.env.MCP_FAULTS_API_KEY = SECRET;
  config = makeConfigDir(MCP_YAML, {
    'mcp_demo.yaml': MCP_AGENT.replace('mcp_servers: [everything]', 'mcp_servers: [everything, keyed]'),
  });
  tdb = await createTestDb();
  t = await createTestPlatform(
    tdb.url,
    { configDir: config.dir, defaultAgentId: 'mcp_demo', leaseSeconds: 5, pollIntervalMs: 100 },
    { logger: log },
  );
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
  config?.remove();
  delete process.env.MCP_FAULTS_API_KEY;
});

describe('MCP server faults', () => {
  it('invalid JSON-RPC from the server: a logged protocol error and a structured tool failure, never a crash', async () => {
    const { status, events } = await runText('call mcp.everything.echo with {"message":"CORRUPT_ME"}');
    expect(status).toBe('completed');
    expect(dataOf(events, 'tool.call.failed')).toEqual([
      expect.objectContaining({ errorCode: 'mcp_protocol_error', message: expect.stringContaining('invalid message') }),
    ]);
    expect(log.records).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: 'mcp protocol error',
        fields: expect.objectContaining({ server: 'everything' }),
      }),
    );
    expect(t.platform.mcp.status().find((s) => s.id === 'everything')).toMatchObject({ state: 'ready' });
    const ok = await runText('call mcp.everything.echo with {"message":"fine"}');
    expect(dataOf(ok.events, 'tool.call.completed')).toHaveLength(1);
  });

  it('a server that never answers hits the timeout; the worker goes on', async () => {
    const { status, events } = await runText('call mcp.everything.echo with {"message":"HANG_ME"}');
    expect(status).toBe('completed');
    const [failed] = dataOf(events, 'tool.call.failed');
    expect(['mcp_timeout', 'tool_timeout']).toContain(failed.errorCode);
    expect(failed.retryable).toBe(true);
    const ok = await runText('call mcp.everything.echo with {"message":"after the hang"}');
    expect(dataOf(ok.events, 'tool.call.completed')).toHaveLength(1);
  });

  it('an oversize result is kept whole as an artifact; the event and the model get an excerpt within max_output_bytes and the reference', async () => {
    const big = 'x'.repeat(5000);
    const { status, events } = await runText(`call mcp.everything.echo with {"message":"${big}"}`);
    expect(status).toBe('completed');
    const [completed] = dataOf(events, 'tool.call.completed');
    expect(completed.truncated).toBe(true);
    const result = completed.result as { marker: string; excerpt: string; artifact: { artifact_id: string } };
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(1024);
    expect(JSON.stringify(result)).not.toContain(big);
    const [created] = dataOf(events, 'artifact.created');
    expect(created).toMatchObject({ source: 'tool_result', mediaType: 'application/json' });
    expect(result.artifact.artifact_id).toBe(created.artifactId);
    expect(result.marker).toContain(
      `exceed the 1024-byte limit; the full result is artifact ${String(created.artifactId)}`,
    );
    const stored = await t.platform.artifacts.open('local', String(created.artifactId));
    const chunks: Buffer[] = [];
    for await (const c of stored!.stream) chunks.push(Buffer.from(c));
    const full = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { trust: string; data: { content: unknown } };
    // The whole result, labelled untrusted like the inline one would have been.
    expect(full.trust).toBe('external_untrusted');
    expect(JSON.stringify(full.data.content)).toContain(big);
  });

  it('a credential passed to a server through its env allowlist appears in no event, log record or tool result', async () => {
    const { status, events } = await runText('call mcp.keyed.get_env with {}');
    expect(status).toBe('completed');
    const [completed] = dataOf(events, 'tool.call.completed');
    // The server echoes its environment; the adapter redacted the value it was given.
    expect(JSON.stringify(completed.result)).toContain('[redacted:MCP_FAULTS_API_KEY]');
    const rows = await t.platform.db.query<{ payload: unknown }>('SELECT payload FROM events');
    const all = JSON.stringify(rows.rows) + JSON.stringify(log.records) + JSON.stringify(t.platform.mcp.status());
    expect(all).toContain('MCP_FAULTS_API_KEY');
    expect(all).not.toContain(SECRET);
  });
});
