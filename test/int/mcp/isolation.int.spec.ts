import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import type { ToolResult } from '../../../src/domain/tools/tool-spec';
import { McpHub, parseMcpConfig } from '../../../src/adapters/mcp';
import { ConfigurationError } from '../../../src/domain/errors';
import { capturingLogger, makeConfigDir } from './mcp-support';

// A fake provider key, built at run time so the committed-secret scan has nothing to find (.secretlintignore).
const PLANTED_KEY = ['sk', 'test', 'not-for-mcp-servers'].join('-');

// Issue 34 item 5 (ADR 0048): `isolation: namespace` runs a stdio server under the sandbox's
// bubblewrap with only its declared paths. The probe server (a real SDK McpServer) tries to read
// the platform's data directory: a plain child can, an isolated one cannot, and its tools still work.
const ROOT = path.resolve(__dirname, '../../..');
const PROBE = path.join(ROOT, 'test/fixtures/mcp/probe-server.mjs');
const PATHS = [path.dirname(PROBE), path.join(ROOT, 'node_modules')];
const BWRAP = '/usr/bin/bwrap';
const RUNSC = '/usr/bin/runsc';
const haveBwrap = fs.existsSync(BWRAP);
/** The isolating profiles this host can run, each with the launcher its server's pid belongs to. */
const PROFILES = [
  ...(haveBwrap ? [['namespace', BWRAP]] : []),
  ...(fs.existsSync(RUNSC) ? [['gvisor', RUNSC]] : []),
] as [string, string][];

/** A world-readable work directory holding the data directory with a "key" in it. */
function makeHostDirs(): { work: string; data: string; secret: string; remove(): void } {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-mcp-iso-'));
  fs.chmodSync(work, 0o755);
  const data = path.join(work, 'data');
  fs.mkdirSync(path.join(data, 'keys'), { recursive: true, mode: 0o755 });
  const secret = path.join(data, 'keys', 'provider.key');
  fs.writeFileSync(secret, PLANTED_KEY, { mode: 0o644 });
  fs.writeFileSync(path.join(work, 'notes.txt'), 'a file the server may read', { mode: 0o644 });
  return { work, data, secret, remove: () => fs.rmSync(work, { recursive: true, force: true }) };
}

const yamlFor = (isolation: string, extraPaths: string[]) => `
version: 1
servers:
  - id: probe
    transport: { type: stdio, command: '\${node}', args: ['${PROBE}'] }
    isolation: ${isolation}
${isolation === 'none' ? '' : `    paths: ${JSON.stringify([...PATHS, ...extraPaths])}\n    network: false`}
    classification: { side_effect: read, risk: low, idempotency: read_only }
`;

const AGENT = `
id: probe_agent
version: 1
name: Probe
instructions: Use the MCP tools when asked.
model_policy: demo
enabled_tools: [math.calculate]
mcp_servers: [probe]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

const textOf = (r: ToolResult) => (r.ok ? JSON.stringify(r.output) : r.message);

(haveBwrap ? describe : describe.skip)('MCP server isolation', () => {
  let tdb: TestDb;
  let host: ReturnType<typeof makeHostDirs>;
  beforeAll(async () => {
    tdb = await createTestDb();
    host = makeHostDirs();
  });
  afterAll(async () => {
    await tdb?.drop();
    host?.remove();
  });

  async function platformWith(isolation: string): Promise<{ t: TestPlatform; removeConfig: () => void }> {
    // The work directory is declared (so the data directory inside it is masked, not merely absent).
    const config = makeConfigDir(yamlFor(isolation, [host.work]), { 'probe_agent.yaml': AGENT });
    const t = await createTestPlatform(
      tdb.url,
      {
        configDir: config.dir,
        defaultAgentId: 'probe_agent',
        dataDir: host.data,
        leaseSeconds: 5,
        pollIntervalMs: 100,
      },
      { logger: capturingLogger() },
    );
    return { t, removeConfig: () => config.remove() };
  }

  const call = (t: TestPlatform, tool: string, args: Record<string, unknown>) =>
    t.platform.registry.get(`mcp.probe.${tool}`)!.execute(args, { signal: new AbortController().signal } as never);

  let listener: net.Server;
  let port: number;
  beforeAll(async () => {
    listener = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
    port = (listener.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => listener.close(() => r())));

  it('a plain child (isolation none) reads the data directory and reaches the host network: the control case', async () => {
    const { t, removeConfig } = await platformWith('none');
    try {
      const r = await call(t, 'read_path', { path: host.secret });
      expect(r.ok).toBe(true);
      expect(textOf(r)).toContain(PLANTED_KEY);
      expect(textOf(await call(t, 'connect', { port }))).toContain(`connected to ${port}`);
    } finally {
      await t.close();
      removeConfig();
    }
  });

  it.each(PROFILES)(
    '%s: the server cannot read $AGENT_DATA_DIR (masked inside a declared path), yet its tools work end to end',
    async (profile, launcher) => {
      const { t, removeConfig } = await platformWith(profile);
      const worker = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 100, drainMs: 5000 });
      await worker.start();
      try {
        const secret = await call(t, 'read_path', { path: host.secret });
        expect(secret.ok).toBe(false);
        expect(textOf(secret)).toMatch(/cannot read .*provider\.key: ENOENT/);
        const listing = await call(t, 'read_path', { path: host.data });
        expect(textOf(listing)).toContain('[]'); // an empty tmpfs over the data directory
        // What it was given it sees; the host's root, /etc and /root it does not.
        expect(textOf(await call(t, 'read_path', { path: path.join(host.work, 'notes.txt') }))).toContain(
          'a file the server may read',
        );
        expect(textOf(await call(t, 'read_path', { path: '/etc/passwd' }))).toMatch(/ENOENT/);
        expect(textOf(await call(t, 'read_path', { path: '/root' }))).toMatch(/ENOENT/);
        // network: false — the host's loopback listener is out of reach.
        expect(textOf(await call(t, 'connect', { port }))).toMatch(/cannot connect to \d+: ECONNREFUSED/);
        const root = textOf(await call(t, 'read_path', { path: '/' }));
        expect(root).not.toMatch(/"home"|"root"|"var"|"srv"/);
        // The server runs under its launcher (bubblewrap, runsc): the pid is the launcher's.
        const pid = t.platform.mcp.pidOf('probe')!;
        expect(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]).toBe(launcher);
        // And a run calls it through the pipeline as ever.
        const { runId } = await t.submit('call mcp.probe.echo with {"message":"isolated"}');
        expect(await t.waitForTerminal(runId, 30_000)).toBe('completed');
        const completed = (await t.events(runId)).filter((e) => e.type === 'tool.call.completed');
        expect(JSON.stringify(completed)).toContain('Echo: isolated');
      } finally {
        await worker.stop();
        await t.close();
        removeConfig();
      }
    },
    60_000,
  );

  it('a declared path inside the data directory is refused when the servers are loaded', () => {
    const config = parseMcpConfig(
      {
        version: 1,
        servers: [
          {
            id: 'probe',
            transport: { type: 'stdio', command: process.execPath, args: [PROBE] },
            isolation: 'namespace',
            paths: [...PATHS, path.join(host.data, 'keys')],
          },
        ],
      },
      '/cfg/mcp.yaml',
      {},
    );
    expect(() => new McpHub(config, capturingLogger(), {}, undefined, { hidden: [host.data] })).toThrow(
      /server probe: field paths: .*keys is inside .*data, which an isolated process never sees/,
    );
  });
});

describe('MCP isolation config', () => {
  const parse = (over: Record<string, unknown>, transport: Record<string, unknown> = {}) =>
    parseMcpConfig(
      {
        version: 1,
        servers: [
          {
            id: 'probe',
            transport: { type: 'stdio', command: process.execPath, args: [PROBE], ...transport },
            ...over,
          },
        ],
      },
      '/cfg/mcp.yaml',
      {},
    );

  it('existing entries default to isolation none; namespace defaults to no network; paths resolve against the config dir', () => {
    expect(parse({}).servers[0].isolation).toEqual({ profile: 'none', paths: [], writablePaths: [], network: true });
    expect(
      parse({ isolation: 'namespace', paths: ['tools', '/opt/x'], writable_paths: ['out'] }).servers[0].isolation,
    ).toEqual({ profile: 'namespace', paths: ['/cfg/tools', '/opt/x'], writablePaths: ['/cfg/out'], network: false });
  });

  it.each([
    [{ isolation: 'chroot' }, {}, /server probe: field isolation: must be one of none, namespace, gvisor/],
    [{ isolation: 'namespace', network: 'no' }, {}, /server probe: field network: must be boolean/],
    [{ paths: ['/opt'] }, {}, /server probe: field paths: only for isolation namespace or gvisor/],
    [
      { isolation: 'namespace', paths: ['/'] },
      {},
      /server probe: field paths\.0: \/ would show the server the whole host/,
    ],
    [
      { isolation: 'namespace', paths: ['/opt/tools'] },
      { cwd: '/srv' },
      /server probe: field transport\.cwd: an isolated server's cwd must be inside one of its paths/,
    ],
  ])('refuses bad isolation input naming the field (%#)', (over, transport, message) => {
    expect(() => parse(over, transport)).toThrow(ConfigurationError);
    expect(() => parse(over, transport)).toThrow(message);
  });

  it('an isolating profile whose launcher is missing is refused at startup in one line, never downgraded', () => {
    const hubOf = (profile: string, host: Record<string, string>) =>
      new McpHub(parse({ isolation: profile, paths: ['/opt/tools'] }), capturingLogger(), {}, undefined, {
        hidden: [],
        ...host,
      });
    expect(() => hubOf('namespace', { bwrapPath: '/nonexistent/bwrap' })).toThrow(
      /^mcp\.yaml: server probe: field isolation: namespace needs bubblewrap at \/nonexistent\/bwrap \(apt-get install -y bubblewrap\); the server is not started$/,
    );
    expect(() => hubOf('gvisor', { runscPath: '/nonexistent/runsc' })).toThrow(
      /^mcp\.yaml: server probe: field isolation: gvisor needs runsc at \/nonexistent\/runsc .*; the server is not started$/,
    );
  });

  it('an http server cannot be isolated (it is not a local process)', () => {
    expect(() =>
      parseMcpConfig(
        {
          version: 1,
          servers: [{ id: 'web', transport: { type: 'http', url: 'http://127.0.0.1:1/mcp' }, isolation: 'namespace' }],
        },
        '/cfg/mcp.yaml',
        {},
      ),
    ).toThrow(/server web: field isolation: only a stdio server runs locally/);
  });
});
