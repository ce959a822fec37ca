import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import type { Worker } from '../../../src/runtime/worker';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import {
  capturingLogger,
  freePort,
  makeConfigDir,
  MCP_AGENT,
  startAuthProxy,
  startEverythingHttp,
  until,
} from './mcp-support';

// server-everything from npm in Streamable HTTP mode, behind a proxy that demands a bearer token
// which the platform reads from the environment (MCP_EVERYTHING_TOKEN) at each request.
const TOKEN = `tok-${Math.random().toString(36).slice(2)}-do-not-leak`;
let serverPort: number;
let proxyPort: number;
let server: { stop(): Promise<void> };
let proxy: Awaited<ReturnType<typeof startAuthProxy>>;
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let config: { dir: string; remove(): void };
const log = capturingLogger();

const dataOf = (events: StoredEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);

async function runText(text: string): Promise<{ runId: string; events: StoredEvent[]; status: string }> {
  const { runId } = await t.submit(text);
  const status = await t.waitForTerminal(runId, 30_000);
  return { runId, status, events: await t.events(runId) };
}

beforeAll(async () => {
  serverPort = await freePort();
  proxyPort = await freePort();
  server = await startEverythingHttp(serverPort);
  proxy = await startAuthProxy(proxyPort, serverPort, TOKEN);
  process.env.MCP_EVERYTHING_TOKEN = TOKEN;
  config = makeConfigDir(
    `
version: 1
servers:
  - id: everything
    transport:
      type: http
      url: http://127.0.0.1:${proxyPort}/mcp
      auth: { env: MCP_EVERYTHING_TOKEN }
    call_timeout_seconds: 20
    tools:
      echo: { side_effect: read, risk: low, idempotency: read_only }
  - id: pinned
    transport: { type: http, url: 'http://127.0.0.1:${serverPort}/mcp' }
    protocol_version: '2025-03-26'
    tools:
      echo: { side_effect: read, risk: low, idempotency: read_only }
`,
    {
      'mcp_demo.yaml': MCP_AGENT,
      'mcp_pinned.yaml': MCP_AGENT.replace('id: mcp_demo', 'id: mcp_pinned').replace(
        'mcp_servers: [everything]',
        'mcp_servers: [pinned]',
      ),
    },
  );
  tdb = await createTestDb();
  t = await createTestPlatform(
    tdb.url,
    { configDir: config.dir, defaultAgentId: 'mcp_demo', leaseSeconds: 5, pollIntervalMs: 100 },
    { logger: log, mcpRestartPolicy: { baseDelayMs: 200, maxDelayMs: 1000, maxRestarts: 5, windowMs: 300_000 } },
  );
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
  await proxy?.stop();
  await server?.stop();
  config?.remove();
  delete process.env.MCP_EVERYTHING_TOKEN;
});

describe('MCP over Streamable HTTP: server-everything', () => {
  it('registers mcp.everything.* over HTTP and reports transport and negotiated protocol version', () => {
    const names = t.platform.registry.list().map((x) => x.spec.name);
    expect(names).toEqual(expect.arrayContaining(['mcp.everything.echo', 'mcp.everything.get_sum']));
    const status = t.platform.mcp.status();
    expect(status.find((s) => s.id === 'everything')).toMatchObject({
      transport: 'http',
      state: 'ready',
      pid: null,
      protocolVersion: '2025-11-25',
      toolCount: expect.any(Number),
    });
    expect(status.find((s) => s.id === 'everything')!.toolCount).toBeGreaterThan(5);
    // The per-server pin offers the older handshake version, and the server agrees to it.
    expect(status.find((s) => s.id === 'pinned')).toMatchObject({ state: 'ready', protocolVersion: '2025-03-26' });
    expect(proxy.seen.authorized).toBeGreaterThan(0);
    expect(proxy.seen.refused).toBe(0);
  });

  it('"call mcp.everything.echo with {...}" completes through policy and the result is labelled untrusted', async () => {
    const { status, events } = await runText('call mcp.everything.echo with {"message":"hi"}');
    expect(status).toBe('completed');
    expect(dataOf(events, 'tool.call.authorized')).toHaveLength(1);
    expect(events.map((e) => e.type)).not.toContain('approval.requested');
    const [completed] = dataOf(events, 'tool.call.completed');
    expect(completed.trust).toBe('external_untrusted');
    expect(completed.result).toMatchObject({
      trust: 'external_untrusted',
      data: { server: 'everything', tool: 'echo', content: [{ type: 'text', text: 'Echo: hi' }] },
    });
  });

  it('the credential is read from the environment at call time: unset → structured failure naming the variable, set again → the next call succeeds', async () => {
    delete process.env.MCP_EVERYTHING_TOKEN;
    try {
      // Forget the session so the next request must authenticate again through the proxy.
      await t.platform.mcp.control('everything', 'restart');
      const failed = await runText('call mcp.everything.echo with {"message":"no token"}');
      expect(failed.status).toBe('completed');
      const [f] = dataOf(failed.events, 'tool.call.failed');
      expect(f).toMatchObject({ errorCode: 'mcp_server_unavailable' });
      expect(String(f.message)).toContain('server_id=everything');
      expect(String(f.message)).toContain('MCP_EVERYTHING_TOKEN');
    } finally {
      process.env.MCP_EVERYTHING_TOKEN = TOKEN;
    }
    await t.platform.mcp.control('everything', 'start');
    await until('ready', () => t.platform.mcp.status().find((s) => s.id === 'everything')!.state === 'ready');
    const ok = await runText('call mcp.everything.echo with {"message":"token back"}');
    expect(dataOf(ok.events, 'tool.call.completed')).toHaveLength(1);
  });

  it('a server restart that forgets the session: structured failure, reconnect with backoff, the next call succeeds', async () => {
    await server.stop();
    server = await startEverythingHttp(serverPort);
    const failed = await runText('call mcp.everything.echo with {"message":"stale session"}');
    expect(failed.status).toBe('completed');
    expect(dataOf(failed.events, 'tool.call.failed')).toEqual([
      expect.objectContaining({
        errorCode: 'mcp_server_unavailable',
        message: expect.stringContaining('server_id=everything'),
      }),
    ]);
    await until('reconnected', () => t.platform.mcp.status().find((s) => s.id === 'everything')!.state === 'ready');
    const ok = await runText('call mcp.everything.echo with {"message":"new session"}');
    expect(dataOf(ok.events, 'tool.call.completed')[0].result).toMatchObject({
      data: { content: [{ type: 'text', text: 'Echo: new session' }] },
    });
  });

  it('the HTTP credential appears in no event, log record or tool result (scan)', async () => {
    const rows = await t.platform.db.query<{ payload: unknown }>('SELECT payload FROM events');
    const everything =
      JSON.stringify(rows.rows) + JSON.stringify(log.records) + JSON.stringify(t.platform.mcp.status());
    expect(everything).toContain('Echo: hi'); // the scan covers the real traffic
    expect(everything).not.toContain(TOKEN);
    // Every request that reached the server carried the credential (an unset one fails before sending).
    expect(proxy.seen.refused).toBe(0);
  });
});
