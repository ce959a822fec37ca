import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { EVERYTHING_STDIO_MCP_YAML, MCP_AGENT, makeConfigDir, until } from './mcp-support';

// MCP calls, failures, restarts and up/down through the Metrics port, read from `GET /metrics` over
// real HTTP; server-everything from npm over stdio, the real worker in the API process.
const MCP_YAML = EVERYTHING_STDIO_MCP_YAML;

let tdb: TestDb;
let api: ApiHarness;
let config: { dir: string; remove(): void };

const dataOf = (events: StoredEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);

async function say(text: string) {
  const session = await api.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL, 'mcp_demo'));
  const { runId } = await api.t.submit(text, {}, session.id);
  const status = await api.t.waitForTerminal(runId, 30_000);
  return { status, events: await api.t.events(runId) };
}

/** `name{labels}` → value from the text exposition. */
async function scrape(): Promise<Map<string, number>> {
  const r = await fetch(`${api.base}/metrics`);
  expect(r.status).toBe(200);
  const samples = new Map<string, number>();
  for (const line of (await r.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    samples.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return samples;
}
const sample = async (key: string) => (await scrape()).get(key) ?? 0;
const CALLS_OK = 'mcp_calls_total{server="everything",status="ok"}';
const CALLS_UNAVAILABLE = 'mcp_calls_total{server="everything",status="mcp_server_unavailable"}';
const RESTARTS = 'mcp_server_restarts_total{server="everything"}';
const UP = 'mcp_server_up{server="everything"}';

beforeAll(async () => {
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
  tdb = await createTestDb();
  api = await startApi(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' }, { worker: true });
});
afterAll(async () => {
  await api?.close();
  await tdb?.drop();
  config?.remove();
});

describe('MCP metrics on GET /metrics', () => {
  it('counts successful calls by server and status, and reports the server up', async () => {
    const before = await sample(CALLS_OK);
    const r = await say('call mcp.everything.echo with {"message":"counted"}');
    expect(r.status).toBe('completed');
    expect(dataOf(r.events, 'tool.call.completed')).toHaveLength(1);
    expect(await sample(CALLS_OK)).toBe(before + 1);
    expect(await sample(UP)).toBe(1);
  });

  it('a stopped server is down, its failed calls are counted by error code, and a restart is counted', async () => {
    const stopped = await call(api.base, 'POST', '/v1/mcp/servers/everything/stop');
    expect(stopped.status).toBe(200);
    expect(await sample(UP)).toBe(0);

    const failedBefore = await sample(CALLS_UNAVAILABLE);
    const failed = await say('call mcp.everything.echo with {"message":"while stopped"}');
    expect(dataOf(failed.events, 'tool.call.failed')).toEqual([
      expect.objectContaining({ errorCode: 'mcp_server_unavailable' }),
    ]);
    expect(await sample(CALLS_UNAVAILABLE)).toBe(failedBefore + 1);

    const restartsBefore = await sample(RESTARTS);
    const restarted = await call(api.base, 'POST', '/v1/mcp/servers/everything/restart');
    expect(restarted.status).toBe(200);
    expect(await sample(RESTARTS)).toBe(restartsBefore + 1);
    expect(await sample(UP)).toBe(1);
  });

  it('a crash is a restart by the supervisor: down, then up again with the restart counted', async () => {
    const restartsBefore = await sample(RESTARTS);
    const pid = api.t.platform.mcp.pidOf('everything')!;
    process.kill(pid, 'SIGKILL');
    await until('the server reported down', async () => (await sample(UP)) === 0);
    await until('the server up again', async () => (await sample(UP)) === 1, 20_000);
    expect(await sample(RESTARTS)).toBe(restartsBefore + 1);
    const ok = await say('call mcp.everything.echo with {"message":"after the crash"}');
    expect(dataOf(ok.events, 'tool.call.completed')).toHaveLength(1);
  });
});
