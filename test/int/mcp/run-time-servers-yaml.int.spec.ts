import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform } from '../../support/platform';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import { EVERYTHING_STDIO_MCP_YAML, MCP_AGENT, capturingLogger, makeConfigDir } from './mcp-support';

// ADR 0052 precedence: config/mcp.yaml seeds the set, and the log wins for every server it names —
// a YAML server's settings changed through the API, or the server removed, stay so at later starts.
let tdb: TestDb;
let api: ApiHarness;
let config: { dir: string; remove(): void };

beforeAll(async () => {
  config = makeConfigDir(EVERYTHING_STDIO_MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
  tdb = await createTestDb();
  api = await startApi(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' });
}, 60_000);
afterAll(async () => {
  await api?.close();
  await tdb?.drop();
  config?.remove();
});

describe('config/mcp.yaml and the server log', () => {
  it("a YAML server's settings changed through the API override the file at the next start", async () => {
    const got = await call(api.base, 'GET', '/v1/mcp/servers/everything/settings');
    expect(got.body).toMatchObject({ id: 'everything', origin: 'yaml' });
    const put = await call(api.base, 'PUT', '/v1/mcp/servers/everything/settings', {
      body: { health_interval_seconds: 11 },
    });
    expect(put.status).toBe(200);
    expect(api.t.platform.mcp.configOf('everything')?.healthIntervalMs).toBe(11_000);
    const later = await createTestPlatform(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' });
    try {
      expect(later.platform.mcp.configOf('everything')?.healthIntervalMs).toBe(11_000);
    } finally {
      await later.close();
    }
  }, 60_000);

  it('a YAML server removed through the API stays removed at the next start (the agent naming it is logged)', async () => {
    const removed = await call(api.base, 'DELETE', '/v1/mcp/servers/everything');
    expect(removed.status).toBe(200);
    expect(removed.body.state).toBe('removed');
    expect(api.t.platform.mcp.has('everything')).toBe(false);
    const log = capturingLogger();
    const later = await createTestPlatform(
      tdb.url,
      { configDir: config.dir, defaultAgentId: 'mcp_demo' },
      { logger: log },
    );
    try {
      expect(later.platform.mcp.has('everything')).toBe(false);
      expect(later.platform.registry.get('mcp.everything.echo')).toBeUndefined();
      expect(log.records).toContainEqual(
        expect.objectContaining({ msg: 'agent names an mcp server removed at run time' }),
      );
    } finally {
      await later.close();
    }
    const row = await api.t.platform.db.query('SELECT status, origin, entry FROM mcp_servers WHERE server_id = $1', [
      'everything',
    ]);
    expect(row.rows).toEqual([{ status: 'removed', origin: 'yaml', entry: null }]);
    // Added again through the API, it runs again.
    const again = await call(api.base, 'POST', '/v1/mcp/servers', {
      body: { ...(await yamlEntry()), health_interval_seconds: 12 },
    });
    expect(again.status).toBe(201);
    expect(api.t.platform.mcp.configOf('everything')?.healthIntervalMs).toBe(12_000);
  }, 60_000);
});

async function yamlEntry(): Promise<Record<string, unknown>> {
  const { parse } = await import('yaml');
  return (parse(EVERYTHING_STDIO_MCP_YAML) as { servers: Record<string, unknown>[] }).servers[0];
}
