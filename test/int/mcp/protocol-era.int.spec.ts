import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseMcpConfig } from '../../../src/adapters/mcp';
import {
  ERA_PROBE_TIMEOUT_MS,
  McpInputRequired,
  McpServerSupervisor,
  McpServerUnavailable,
} from '../../../src/adapters/mcp/supervisor';
import { mapTools } from '../../../src/adapters/mcp/mcp-tools';
import { capturingLogger, EVERYTHING, until } from './mcp-support';

// ClotoCore §3.1.3 / ADR 0051 against real processes: a modern-era (2026-07-28) test server that logs
// every method it receives, and server-everything (a 2025-era server) from npm.
const MODERN = path.resolve(__dirname, '../../fixtures/mcp/modern-server.mjs');

let dir: string;
const started: McpServerSupervisor[] = [];
beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-era-'))));
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A supervisor for the modern test server in `mode`, and the file its received methods go to. */
function modern(mode: string, extra: Record<string, unknown> = {}) {
  const log = path.join(dir, `${mode}-${started.length}-${Date.now()}.log`);
  const [config] = parseMcpConfig(
    {
      version: 1,
      servers: [
        {
          id: 'modern',
          transport: {
            type: 'stdio',
            command: process.execPath,
            args: [MODERN],
            env_allowlist: ['MODE', 'MODERN_LOG'],
          },
          startup_timeout_seconds: 20,
          health_interval_seconds: 0,
          restart: { strategy: 'never' },
          ...extra,
        },
      ],
    },
    '/cfg/mcp.yaml',
    {},
  ).servers;
  process.env.MODE = mode;
  process.env.MODERN_LOG = log;
  const supervisor = new McpServerSupervisor(config, capturingLogger());
  started.push(supervisor);
  const methods = () =>
    fs.existsSync(log)
      ? fs
          .readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((l) => (JSON.parse(l) as { method: string | null }).method)
      : [];
  return { supervisor, methods };
}

describe('MCP protocol era negotiation (§3.1.3)', () => {
  it('a modern server is used in the modern era: the probe only, no initialize on the wire', async () => {
    const { supervisor, methods } = modern('modern');
    const tools = await supervisor.listTools();
    expect(tools.map((t) => t.name)).toEqual(['echo', 'ask']);
    expect(supervisor.status()).toMatchObject({ state: 'ready', era: 'modern', protocolVersion: '2026-07-28' });
    expect(supervisor.instructions).toBe('Modern server: always call echo before ask.');
    // Offered to the context engine with every tool of the server (rendered once, untrusted, in the tool region).
    expect(mapTools(supervisor, tools).tools.map((t) => t.spec.serverNotes)).toEqual([
      { source: 'mcp.modern', text: 'Modern server: always call echo before ask.' },
      { source: 'mcp.modern', text: 'Modern server: always call echo before ask.' },
    ]);
    const out = await supervisor.callTool('echo', { message: 'hi' }, new AbortController().signal, 5000);
    expect(out).toMatchObject({ isError: false, content: [{ type: 'text', text: 'Echo: hi' }] });
    expect(methods()).toEqual(['server/discover', 'tools/list', 'tools/call']);
  });

  it('in the modern era, resultType input_required is an explicit tool error, not a result', async () => {
    const { supervisor } = modern('modern');
    const call = supervisor.callTool('ask', {}, new AbortController().signal, 5000);
    await expect(call).rejects.toThrow(McpInputRequired);
    await expect(call).rejects.toThrow(/input_required/);
    expect(supervisor.status().state).toBe('ready');
  });

  it('server-everything stays on the initialize handshake (it answers the probe with an error)', async () => {
    const [config] = parseMcpConfig(
      {
        version: 1,
        servers: [
          {
            id: 'everything',
            transport: { type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] },
            health_interval_seconds: 0,
          },
        ],
      },
      '/cfg/mcp.yaml',
      {},
    ).servers;
    const supervisor = new McpServerSupervisor(config, capturingLogger());
    started.push(supervisor);
    const tools = await supervisor.listTools();
    expect(tools.map((t) => t.name)).toContain('echo');
    expect(mapTools(supervisor, tools).tools.every((t) => t.spec.serverNotes === undefined)).toBe(true);
    expect(supervisor.status()).toMatchObject({ state: 'ready', era: 'legacy', protocolVersion: '2025-11-25' });
    expect(supervisor.instructions).toBeNull();
  });

  it('a server that answers the probe with silence falls back to initialize within 10 s', async () => {
    const { supervisor, methods } = modern('silent');
    const t0 = Date.now();
    await supervisor.ready();
    const took = Date.now() - t0;
    expect(took).toBeLessThan(10_000); // the 8 s probe window, then a fresh process and its handshake
    expect(took).toBeGreaterThanOrEqual(ERA_PROBE_TIMEOUT_MS);
    expect(supervisor.status()).toMatchObject({ state: 'ready', era: 'legacy', protocolVersion: '2025-11-25' });
    await until('the initialized notification is logged', () => methods().length >= 3);
    // The probe went to the first process, the handshake to the fresh one (the log line carries the pid).
    expect(methods()).toEqual(['server/discover', 'initialize', 'notifications/initialized']);
  }, 30_000);

  it('-32022 naming no version we speak fails the connect with the server message', async () => {
    const { supervisor, methods } = modern('incompatible');
    const start = supervisor.ready();
    await expect(start).rejects.toThrow(McpServerUnavailable);
    await expect(start).rejects.toThrow(/this server speaks 2099-01-01 only/);
    expect(supervisor.status()).toMatchObject({ state: 'failed', era: null });
    expect(methods()).toEqual(['server/discover']); // no fallback to initialize after a genuine incompatibility
  });

  it('a process that dies during the probe is an outage (the restart policy), never an era verdict', async () => {
    const { supervisor, methods } = modern('exit');
    await expect(supervisor.ready()).rejects.toThrow(McpServerUnavailable);
    expect(supervisor.status()).toMatchObject({ state: 'failed', era: null });
    expect(methods()).toEqual(['server/discover']); // no initialize: it was not read as a legacy server
  });

  it('protocol_era: legacy skips the probe', async () => {
    const { supervisor, methods } = modern('modern', { protocol_era: 'legacy' });
    await supervisor.ready();
    expect(supervisor.status()).toMatchObject({ era: 'legacy', protocolVersion: '2025-11-25' });
    await until('the initialized notification is logged', () => methods().length >= 2);
    expect(methods()).toEqual(['initialize', 'notifications/initialized']);
  });

  it('protocol_era: modern refuses a server that is not modern instead of falling back', async () => {
    const { supervisor, methods } = modern('silent', { protocol_era: 'modern', startup_timeout_seconds: 3 });
    await expect(supervisor.ready()).rejects.toThrow(McpServerUnavailable);
    expect(methods()).not.toContain('initialize');
  }, 20_000);
});
