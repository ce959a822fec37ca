import { parseMcpConfig } from '../../../src/adapters/mcp';
import { ConfigurationError } from '../../../src/domain/errors';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import type { Worker } from '../../../src/runtime/worker';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import { EVERYTHING, capturingLogger, makeConfigDir, until } from './mcp-support';

// Issue 34 item 2 (ADR 0052): servers added, changed and removed through the API reach every
// process — two API platforms and a worker platform on one database, each with its own pool, its
// own LISTEN connection and its own server-everything child — without a restart.
const AGENT = `
id: mcp_admin_demo
version: 1
name: MCP admin demo
instructions: Use the MCP tools when asked.
model_policy: demo
enabled_tools: [math.calculate]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

const ENTRY = {
  id: 'added',
  transport: { type: 'stdio', command: '${node}', args: [EVERYTHING, 'stdio'], env_allowlist: ['HOME'] },
  classification: { side_effect: 'read', risk: 'low', idempotency: 'read_only' },
};

let tdb: TestDb;
let api1: ApiHarness;
let api2: ApiHarness;
let workerPlatform: TestPlatform;
let worker: Worker;
let config: { dir: string; remove(): void };
const log = capturingLogger();

const processes = () => [api1.t, api2.t, workerPlatform];
const count = async (sql: string) => Number((await api1.t.platform.db.query<{ n: string }>(sql)).rows[0].n);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  config = makeConfigDir('version: 1\nservers: []\n', { 'mcp_admin_demo.yaml': AGENT });
  tdb = await createTestDb();
  const settings = { configDir: config.dir, defaultAgentId: 'mcp_admin_demo', mcpControlAckTimeoutMs: 10_000 };
  api1 = await startApi(tdb.url, settings, { platform: { logger: log } });
  api2 = await startApi(tdb.url, settings);
  workerPlatform = await createTestPlatform(tdb.url, { ...settings, leaseSeconds: 5, pollIntervalMs: 100 });
  worker = workerPlatform.platform.createWorker({ concurrency: 2, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
}, 60_000);
afterAll(async () => {
  await worker?.stop();
  await workerPlatform?.close();
  await api2?.close();
  await api1?.close();
  await tdb?.drop();
  config?.remove();
});

/**
 * How long an added server may take to be offered on every process in this test: the target
 * is 2 s, met on an idle machine (docs/mcp.md); the bound leaves room for the suite's own load.
 */
const SPREAD_BOUND_MS = Number(process.env.MCP_SPREAD_BOUND_MS ?? 15_000);

describe('MCP servers managed at run time', () => {
  it('an added server is callable by a new run on every process within 2 s; deleting it stops it everywhere', async () => {
    const started = Date.now();
    const added = await call(api1.base, 'POST', '/v1/mcp/servers', { body: ENTRY });
    expect(added.status).toBe(201);
    await until(
      'every process offers mcp.added.echo',
      () => processes().every((t) => t.platform.registry.get('mcp.added.echo') !== undefined),
      SPREAD_BOUND_MS,
    );
    const elapsed = Date.now() - started;
    // The answer waits for both other processes' acknowledgements.
    expect(added.body.state).toBe('ready');
    expect(added.body.processes.unacknowledged).toEqual([]);
    expect(added.body.processes.acknowledged).toHaveLength(2);
    for (const a of added.body.processes.acknowledged) expect(a).toMatchObject({ state: 'ready', error: null });
    const pids = processes().map((t) => t.platform.mcp.pidOf('added')!);
    expect(new Set(pids).size).toBe(3);

    const granted = await call(api2.base, 'PUT', '/v1/mcp/servers/added/access', {
      body: { agents: { mcp_admin_demo: { default: 'allow', tools: { get_env: 'deny' } } } },
    });
    expect(granted.status).toBe(200);
    expect(granted.body.items).toEqual([
      expect.objectContaining({ agent_id: 'mcp_admin_demo', grant: expect.objectContaining({ default: 'allow' }) }),
    ]);
    const { runId } = await api2.t.submit('call mcp.added.echo with {"message":"run-time"}');
    expect(await workerPlatform.waitForTerminal(runId, 30_000)).toBe('completed');
    const events = await workerPlatform.events(runId);
    expect(events.find((e) => e.type === 'tool.call.completed')).toBeDefined();
    expect(JSON.stringify(events.filter((e) => e.type === 'tool.call.completed'))).toContain('run-time');

    const tools = await call(api1.base, 'GET', '/v1/mcp/servers/added/tools');
    expect(tools.body.items).toContainEqual(
      expect.objectContaining({
        name: 'mcp.added.echo',
        description: expect.any(String),
        input_schema: expect.objectContaining({ type: 'object' }),
        classification: expect.objectContaining({ side_effect: 'read', risk: 'low' }),
      }),
    );

    const removed = await call(api2.base, 'DELETE', '/v1/mcp/servers/added');
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ state: 'removed', entry: null });
    expect(removed.body.processes.acknowledged).toEqual([
      expect.objectContaining({ state: 'removed', error: null }),
      expect.objectContaining({ state: 'removed', error: null }),
    ]);
    for (const t of processes()) {
      expect(t.platform.mcp.has('added')).toBe(false);
      expect(t.platform.registry.get('mcp.added.echo')).toBeUndefined();
    }
    await until('every server process exited', () => pids.every((p) => !alive(p)), 5000);
    expect((await call(api1.base, 'GET', '/v1/mcp/servers/added/settings')).status).toBe(404);
    expect((await call(api1.base, 'DELETE', '/v1/mcp/servers/added')).status).toBe(404);
    // The 2 s is a figure for an idle machine (measured there, docs/mcp.md); under the full
    // suite three server children start on two shared cores, so the test bounds it loosely.
    expect(elapsed).toBeLessThan(SPREAD_BOUND_MS);
  }, 90_000);

  it('settings are read and replaced (mcp.server.updated), applied everywhere; the log rebuilds to 0 differences', async () => {
    const entry = { ...ENTRY, id: 'tuned' };
    expect((await call(api1.base, 'POST', '/v1/mcp/servers', { body: entry })).status).toBe(201);
    const dup = await call(api2.base, 'POST', '/v1/mcp/servers', { body: entry });
    expect(dup.status).toBe(409);
    expect(dup.body.error.details).toMatchObject({ field: 'id' });

    const put = await call(api2.base, 'PUT', '/v1/mcp/servers/tuned/settings', {
      body: { health_interval_seconds: 7, restart: { strategy: 'always', max_restarts: 3 } },
    });
    expect(put.status).toBe(200);
    expect(put.body.processes.acknowledged).toHaveLength(2);
    for (const t of processes())
      expect(t.platform.mcp.configOf('tuned')).toMatchObject({
        healthIntervalMs: 7000,
        restart: expect.objectContaining({ strategy: 'always', maxRestarts: 3 }),
      });
    const got = await call(api1.base, 'GET', '/v1/mcp/servers/tuned/settings');
    expect(got.body).toMatchObject({ id: 'tuned', origin: 'api', settings: { health_interval_seconds: 7 } });
    const bad = await call(api1.base, 'PUT', '/v1/mcp/servers/tuned/settings', {
      body: { restart: { strategy: 'sometimes' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toMatchObject({ field: 'restart.strategy' });

    const log = await api1.t.platform.db.query<{ type: string; actor_id: string }>(
      `SELECT event_type AS type, actor_id FROM events WHERE event_type LIKE 'mcp.server.%' ORDER BY id`,
    );
    expect(log.rows.map((r) => r.type)).toEqual([
      'mcp.server.added',
      'mcp.server.removed',
      'mcp.server.added',
      'mcp.server.updated',
    ]);
    const report = await api1.t.platform.rebuildProjections({ verify: true });
    for (const p of report.projections)
      expect({ name: p.name, differing: p.differingRows }).toEqual({
        name: p.name,
        differing: 0,
      });
    expect(report.projections.find((p) => p.name === 'mcp_servers')!.rows).toBe(2);
  }, 60_000);

  it('refuses bad entries naming the field, writing nothing', async () => {
    const events = await count('SELECT count(*)::text AS n FROM events');
    const rows = await count('SELECT count(*)::text AS n FROM mcp_servers');
    const cases: [Record<string, unknown>, string][] = [
      [
        { ...ENTRY, id: 'shell', transport: { type: 'stdio', command: 'node server.js | tee log' } },
        'transport.command',
      ],
      [
        {
          ...ENTRY,
          id: 'keyenv',
          transport: { ...ENTRY.transport, env_allowlist: ['sk-proj-' + 'abcdefghijklmnopqrstuvwx'] },
        },
        'transport.env_allowlist.0',
      ],
      [
        {
          ...ENTRY,
          id: 'keyarg',
          transport: { ...ENTRY.transport, args: ['--token', 'sk-proj-' + 'abcdefghijklmnopqrstuvwx'] },
        },
        'transport.args.1',
      ],
      [{ ...ENTRY, id: 'era', protocol_era: 'sideways' }, 'protocol_era'],
      [{ ...ENTRY, id: 'strategy', restart: { strategy: 'sometimes' } }, 'restart.strategy'],
      [{ ...ENTRY, id: 'mcp' }, 'id'],
    ];
    for (const [body, field] of cases) {
      const r = await call(api1.base, 'POST', '/v1/mcp/servers', { body });
      expect({ field, status: r.status, code: r.body.error?.code }).toEqual({
        field,
        status: 400,
        code: 'validation_error',
      });
      expect(r.body.error.details).toMatchObject({ field });
      expect(JSON.stringify(r.body)).not.toContain('abcdefghijklmnopqrstuvwx');
      // The same entry in config/mcp.yaml is refused naming the same field.
      expect(() => parseMcpConfig({ version: 1, servers: [body] }, 'mcp.yaml', process.env, config.dir)).toThrow(
        ConfigurationError,
      );
    }
    expect(await count('SELECT count(*)::text AS n FROM events')).toBe(events);
    expect(await count('SELECT count(*)::text AS n FROM mcp_servers')).toBe(rows);
    expect(JSON.stringify(log.records)).not.toContain('abcdefghijklmnopqrstuvwx');
  });
});
