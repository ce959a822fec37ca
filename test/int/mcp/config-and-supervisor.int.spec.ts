import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform } from '../../support/platform';
import { McpHub, parseMcpConfig, UNCLASSIFIED } from '../../../src/adapters/mcp';
import { classify } from '../../../src/adapters/mcp/mcp-tools';
import { ConfigurationError } from '../../../src/domain/errors';
import { capturingLogger, EVERYTHING, makeConfigDir, MCP_AGENT, until } from './mcp-support';

const server = (over: Record<string, unknown> = {}) => ({
  id: 'everything',
  transport: { type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] },
  ...over,
});
const parse = (servers: unknown[]) => parseMcpConfig({ version: 1, servers }, '/cfg/mcp.yaml', {});

describe('config/mcp.yaml', () => {
  it('the shipped file configures no servers', () => {
    const { loadMcpConfig } = jest.requireActual('../../../src/adapters/mcp');
    expect(loadMcpConfig(path.resolve(__dirname, '../../../config')).servers).toEqual([]);
  });

  it.each([
    [[server({ transport: { type: 'sse', command: 'x' } })], /server everything: field transport\.type/],
    [
      [server({ transport: { type: 'http', command: 'x' } })],
      /server everything: field transport: missing field 'url'/,
    ],
    [
      [server({ transport: { type: 'http', url: 'not a url' } })],
      /server everything: field transport\.url: not a valid URL/,
    ],
    [
      [server({ transport: { type: 'http', url: 'ftp://h/x' } })],
      /server everything: field transport\.url: must be an http/,
    ],
    [
      [server({ transport: { type: 'http', url: 'http://u:p@h/mcp' } })],
      /server everything: field transport\.url: must not embed credentials/,
    ],
    [
      [server({ transport: { type: 'http', url: 'http://h/mcp', auth: { env: 'bad name' } } })],
      /server everything: field transport\.auth\.env/,
    ],
    [[server({ protocol_version: '1999-01-01' })], /server everything: field protocol_version/],
    [[server({ protocol_era: 'future' })], /server everything: field protocol_era/],
    [[server({ transport: { type: 'stdio' } })], /server everything: field transport: missing field 'command'/],
    [[server({ id: 'math' })], /server math: field id: collides with a builtin tool domain/],
    [[server({ id: 'mcp' })], /server mcp: field id/],
    [[server({ id: 'Bad-Id' })], /server Bad-Id: field id/],
    [
      [server({ tools: { echo: { side_effect: 'sometimes', risk: 'low', idempotency: 'read_only' } } })],
      /server everything: field tools\.echo\.side_effect/,
    ],
    [[server({ call_timeout_seconds: 0 })], /server everything: field call_timeout_seconds/],
    [[server({ colour: 'red' })], /server everything: field colour: unknown field 'colour'/],
    [[server(), server()], /server everything: field id: duplicate/],
    // ADR 0052: the checks the API shares with the file.
    [
      [server({ transport: { type: 'stdio', command: 'node server.js --stdio' } })],
      /server everything: field transport\.command: must be one executable, not a shell command line/,
    ],
    [
      [
        server({
          transport: { type: 'stdio', command: 'x', args: ['--key', 'sk-proj-' + 'abcdefghijklmnopqrstuvwx'] },
        }),
      ],
      /server everything: field transport\.args\.1: looks like a credential/,
    ],
    [
      [
        server({
          transport: { type: 'stdio', command: 'x', env_allowlist: ['sk-proj-' + 'abcdefghijklmnopqrstuvwx'] },
        }),
      ],
      /server everything: field transport\.env_allowlist\.0/,
    ],
    [[server({ restart: { strategy: 'sometimes' } })], /server everything: field restart\.strategy: must be one of/],
    [
      [server({ transport: { type: 'stdio', command: '${NOPE_NOT_SET}' } })],
      /server everything: field transport\.command references \$\{NOPE_NOT_SET\}/,
    ],
  ])('refuses malformed server config naming server and field (%#)', (servers, message) => {
    expect(() => parse(servers)).toThrow(ConfigurationError);
    expect(() => parse(servers)).toThrow(message);
  });

  it('refuses a wrong file version', () => {
    expect(() => parseMcpConfig({ version: 2, servers: [] }, 'mcp.yaml', {})).toThrow(/version/);
  });

  it('annotations only make a classification stricter; unclassified means external write', () => {
    const [cfg] = parse([
      server({ tools: { a: { side_effect: 'read', risk: 'low', idempotency: 'read_only' } } }),
    ]).servers;
    const tool = (name: string, annotations = {}) => ({
      name,
      description: '',
      inputSchema: { type: 'object' },
      annotations,
    });
    expect(classify(cfg, tool('b', { readOnlyHint: true }))).toEqual(UNCLASSIFIED);
    expect(classify(cfg, tool('a', { readOnlyHint: true }))).toMatchObject({ sideEffect: 'read' });
    expect(classify(cfg, tool('a', { destructiveHint: true }))).toMatchObject({
      sideEffect: 'external_write',
      risk: 'high',
      idempotency: 'non_idempotent',
    });
    expect(classify(cfg, tool('a', { readOnlyHint: false }))).toMatchObject({ sideEffect: 'external_write' });
  });

  it('a malformed config/mcp.yaml is refused at platform startup, naming server and field', async () => {
    const config = makeConfigDir('version: 1\nservers:\n  - id: broken\n    transport: { type: stdio, args: [] }\n');
    const tdb: TestDb = await createTestDb();
    try {
      await expect(createTestPlatform(tdb.url, { configDir: config.dir })).rejects.toThrow(
        /server broken: field transport: missing field 'command'/,
      );
    } finally {
      await tdb.drop();
      config.remove();
    }
  });

  it('an agent granting an unconfigured server is refused at startup', async () => {
    const config = makeConfigDir('version: 1\nservers: []\n', { 'mcp_demo.yaml': MCP_AGENT });
    const tdb: TestDb = await createTestDb();
    try {
      await expect(createTestPlatform(tdb.url, { configDir: config.dir })).rejects.toThrow(
        /agent mcp_demo: mcp_servers names everything/,
      );
    } finally {
      await tdb.drop();
      config.remove();
    }
  });
});

describe('MCP supervisor', () => {
  it('a server that cannot start yields mcp_server_unavailable with the server id, and after 5 restarts in the window it is marked failed and fails fast with the reason', async () => {
    const log = capturingLogger();
    const { servers } = parse([
      server({
        id: 'crashy',
        transport: { type: 'stdio', command: process.execPath, args: ['-e', 'process.exit(3)'] },
        startup_timeout_seconds: 5,
      }),
    ]);
    const hub = new McpHub({ version: 1, servers }, log, {
      baseDelayMs: 20,
      maxDelayMs: 80,
      maxRestarts: 5,
      windowMs: 300_000,
    });
    try {
      const first = await hub.discover('crashy');
      expect(first.tools).toEqual([]);
      expect(first.error).toMatch(/MCP server crashy is unavailable/);
      await until('failed', () => hub.status()[0].state === 'failed', 10_000);
      const s = hub.status()[0];
      expect(s.restarts).toBe(5);
      expect(s.lastError).toMatch(/gave up after 5 restarts in 300 s/);
      const started = Date.now();
      const again = await hub.discover('crashy');
      expect(again.error).toMatch(/gave up after 5 restarts/);
      expect(Date.now() - started).toBeLessThan(200); // fails fast, no new child
      expect(log.records).toContainEqual(expect.objectContaining({ level: 'error', msg: 'mcp server marked failed' }));
    } finally {
      await hub.close();
    }
  });

  it('restart delays double from the base and are capped', async () => {
    const log = capturingLogger();
    const { servers } = parse([
      server({
        id: 'crashy',
        transport: { type: 'stdio', command: process.execPath, args: ['-e', 'process.exit(3)'] },
      }),
    ]);
    const hub = new McpHub({ version: 1, servers }, log, {
      baseDelayMs: 10,
      maxDelayMs: 40,
      maxRestarts: 5,
      windowMs: 300_000,
    });
    try {
      await hub.discover('crashy');
      await until('failed', () => hub.status()[0].state === 'failed', 10_000);
      const delays = log.records.filter((r) => r.msg === 'mcp server restart scheduled').map((r) => r.fields.delayMs);
      expect(delays).toEqual([10, 20, 40, 40, 40]);
    } finally {
      await hub.close();
    }
  });
});
