import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { createTestDb, type TestDb } from '../../support/test-db';
import { ENTRY, ensureBuilt, ROOT } from '../../support/processes';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import {
  MCP_CONTROL_APPLICATION_PREFIX,
  MCP_CONTROL_CHANNEL,
} from '../../../src/adapters/postgres/notify/pg-mcp-control';
import { EVERYTHING_STDIO_MCP_YAML, MCP_AGENT, capturingLogger, makeConfigDir, until } from './mcp-support';

// Operator start/stop/restart through the API reach another platform on the same database (as the
// worker process of `agent start` is): NOTIFY agent_mcp_control, applied to that platform's own
// supervisors and acknowledged on agent_mcp_control_ack, so the API answers with what every other
// process did. Each platform runs its own server-everything child over stdio.
const MCP_YAML = EVERYTHING_STDIO_MCP_YAML;

let tdb: TestDb;
let api: ApiHarness;
let other: TestPlatform;
let config: { dir: string; remove(): void };
const log = capturingLogger();

const stateOf = (t: TestPlatform) => t.platform.mcp.status().find((s) => s.id === 'everything')!;

// Long enough for the other process to start its child on a loaded machine; the process that never
// answers costs it twice in the last test.
const ACK_TIMEOUT_MS = 8000;
const execFileAsync = promisify(execFile);

/** `agent mcp <args>` against this test's API, in a child process (the API runs in this one). */
async function agentMcp(args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const r = await execFileAsync(process.execPath, [ENTRY, 'mcp', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, AGENT_API_URL: api.base },
      timeout: 30_000,
    });
    return { code: 0, stdout: r.stdout };
  } catch (e) {
    const err = e as { code?: number; stdout?: string };
    return { code: err.code ?? -1, stdout: err.stdout ?? '' };
  }
}

beforeAll(async () => {
  ensureBuilt();
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
  tdb = await createTestDb();
  api = await startApi(tdb.url, {
    configDir: config.dir,
    defaultAgentId: 'mcp_demo',
    mcpControlAckTimeoutMs: ACK_TIMEOUT_MS,
  });
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
    // The answer waits for the other process's acknowledgement: it has already stopped.
    expect(stopped.body.processes).toEqual({
      broadcast: true,
      acknowledged: [
        { process: other.platform.mcpControl.origin, service: 'test', pid: process.pid, state: 'stopped', error: null },
      ],
      unacknowledged: [],
    });
    expect(stateOf(other).state).toBe('stopped');
    expect(other.platform.mcp.pidOf('everything')).toBeNull();

    const started = await call(api.base, 'POST', '/v1/mcp/servers/everything/start');
    expect(started.body).toMatchObject({ state: 'ready' });
    expect(started.body.processes.acknowledged).toEqual([expect.objectContaining({ state: 'ready', error: null })]);
    expect(stateOf(other).state).toBe('ready');

    const before = other.platform.mcp.pidOf('everything');
    const restarted = await call(api.base, 'POST', '/v1/mcp/servers/everything/restart');
    expect(restarted.body).toMatchObject({ state: 'ready', restarts: 1 });
    expect(restarted.body.processes.acknowledged).toEqual([expect.objectContaining({ state: 'ready' })]);
    expect(stateOf(other)).toMatchObject({ restarts: 1, state: 'ready' });
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

  it('a listening process that does not answer is named after the timeout; the CLI prints every process and fails on it', async () => {
    const cli = await agentMcp(['restart', 'everything']);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`test pid ${process.pid} (${other.platform.mcpControl.origin.slice(0, 8)}): ready`);

    // A process that listens for actions but never applies them (hung, or an older build).
    const ghost = new Client({ connectionString: tdb.url, application_name: `${MCP_CONTROL_APPLICATION_PREFIX}ghost` });
    await ghost.connect();
    try {
      await ghost.query(`LISTEN ${MCP_CONTROL_CHANNEL}`);
      const started = Date.now();
      const r = await call(api.base, 'POST', '/v1/mcp/servers/everything/restart');
      expect(r.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(ACK_TIMEOUT_MS - 100);
      expect(r.body.processes).toEqual({
        broadcast: true,
        acknowledged: [expect.objectContaining({ process: other.platform.mcpControl.origin, state: 'ready' })],
        unacknowledged: ['ghost'],
      });
      const failing = await agentMcp(['stop', 'everything']);
      expect(failing.code).toBe(1);
      expect(failing.stdout).toContain('process ghost: did not acknowledge in time');
      expect(failing.stdout).toContain(': stopped');
    } finally {
      await ghost.end();
    }
  }, 120_000);
});
