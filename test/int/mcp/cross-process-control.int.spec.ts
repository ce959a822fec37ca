import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import { MCP_CONTROL_CHANNEL } from '../../../src/adapters/postgres/notify/pg-mcp-control';
import { capturingLogger, EVERYTHING, makeConfigDir, MCP_AGENT, until } from './mcp-support';

// Operator start/stop/restart through the API reach another platform on the same database (as the
// worker process of `agent start` is): NOTIFY agent_mcp_control, applied to that platform's own
// supervisors. Each platform runs its own server-everything child over stdio.
const MCP_YAML = `
version: 1
servers:
  - id: everything
    transport: { type: stdio, command: '\${node}', args: ['${EVERYTHING}', 'stdio'] }
    classification: { side_effect: read, risk: low, idempotency: read_only }
`;

let tdb: TestDb;
let api: ApiHarness;
let other: TestPlatform;
let config: { dir: string; remove(): void };
const log = capturingLogger();

const stateOf = (t: TestPlatform) => t.platform.mcp.status().find((s) => s.id === 'everything')!;

beforeAll(async () => {
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
  tdb = await createTestDb();
  api = await startApi(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' });
  other = await createTestPlatform(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' }, { logger: log });
});
afterAll(async () => {
  await other?.close();
  await api?.close();
  await tdb?.drop();
  config?.remove();
});

describe('operator MCP actions across processes', () => {
  it('stop, start and restart through the API are applied by the other platform too, once each', async () => {
    expect(stateOf(other).state).toBe('ready');
    const otherPid = other.platform.mcp.pidOf('everything');
    expect(otherPid).not.toBe(api.t.platform.mcp.pidOf('everything'));

    const stopped = await call(api.base, 'POST', '/v1/mcp/servers/everything/stop');
    expect(stopped.body).toMatchObject({ state: 'stopped' });
    await until('the other platform stopped', () => stateOf(other).state === 'stopped');
    expect(other.platform.mcp.pidOf('everything')).toBeNull();

    const started = await call(api.base, 'POST', '/v1/mcp/servers/everything/start');
    expect(started.body).toMatchObject({ state: 'ready' });
    await until('the other platform started', () => stateOf(other).state === 'ready');

    const before = other.platform.mcp.pidOf('everything');
    const restarted = await call(api.base, 'POST', '/v1/mcp/servers/everything/restart');
    expect(restarted.body).toMatchObject({ state: 'ready', restarts: 1 });
    await until(
      'the other platform restarted',
      () => stateOf(other).restarts === 1 && stateOf(other).state === 'ready',
    );
    expect(other.platform.mcp.pidOf('everything')).not.toBe(before);
    // The API process ignores its own notice: one restart there, not two.
    expect(stateOf(api.t).restarts).toBe(1);
  });

  it('malformed or unknown notices are logged and ignored; a valid one after them is applied', async () => {
    const pid = other.platform.mcp.pidOf('everything');
    expect(pid).not.toBeNull();
    const bad = [
      'not json',
      '{"origin":"x","server":"nope","action":"stop"}',
      '{"origin":"x","server":"everything","action":"explode"}',
    ];
    for (const payload of bad)
      await api.t.platform.db.query('SELECT pg_notify($1, $2)', [MCP_CONTROL_CHANNEL, payload]);
    // Notices arrive in order; once this one is applied the ones before it have been handled.
    await api.t.platform.mcpControl.broadcast('everything', 'stop');
    await until('the other platform stopped', () => stateOf(other).state === 'stopped');
    expect(log.records.filter((r) => r.msg.startsWith('mcp control notice ignored'))).toHaveLength(3);
    expect(stateOf(other).restarts).toBe(1);
    // The sender ignores its own notice.
    expect(stateOf(api.t).state).toBe('ready');
  });
});
