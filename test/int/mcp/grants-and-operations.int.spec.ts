import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { expandScopes } from '../../../src/api/auth/scopes';
import { EVERYTHING_STDIO_MCP_YAML, makeConfigDir, until } from './mcp-support';

// Per-agent grants and operator routes over real HTTP (AUTH_MODE=dev: the local principal is admin),
// with server-everything from npm over stdio and the real worker.
const MCP_YAML = EVERYTHING_STDIO_MCP_YAML;
const GRANTED_AGENT = `
id: mcp_demo
version: 1
name: MCP demo
instructions: Use the MCP tools when asked.
model_policy: demo
enabled_tools: [math.calculate]
mcp_servers:
  everything: { default: allow, tools: { get_env: deny } }
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

let tdb: TestDb;
let api: ApiHarness;
let config: { dir: string; remove(): void };

const dataOf = (events: StoredEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);

async function say(agentId: string, text: string, modelPolicy?: string) {
  const session = await api.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL, agentId));
  const { runId } = await api.t.submit(text, modelPolicy ? { modelPolicy } : {}, session.id);
  const status = await api.t.waitForTerminal(runId, 30_000);
  return { status, events: await api.t.events(runId) };
}

beforeAll(async () => {
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': GRANTED_AGENT });
  fs.writeFileSync(
    path.join(config.dir, 'model-fixtures', 'forged_get_env.yaml'),
    `name: forged_get_env
description: a call to an MCP tool the agent's grant denies
turns:
  - tool_calls:
      - name: mcp.everything.get_env
        arguments: {}
  - text: "done"
`,
  );
  tdb = await createTestDb();
  api = await startApi(tdb.url, { configDir: config.dir, defaultAgentId: 'mcp_demo' }, { worker: true });
});
afterAll(async () => {
  await api?.close();
  await tdb?.drop();
  config?.remove();
});

describe('per-agent MCP grants', () => {
  it('a per-tool deny hides the tool from the request, and a forged call to it is denied before execution', async () => {
    const offered = await say('mcp_demo', 'call mcp.everything.get_env with {}');
    expect(offered.events.map((e) => e.type)).not.toContain('tool.call.proposed');
    expect(JSON.stringify(offered.events)).toContain('I would need the mcp.everything.get_env tool');

    const forged = await say('mcp_demo', 'forge', 'fake:forged_get_env');
    expect(forged.status).toBe('completed');
    expect(dataOf(forged.events, 'tool.call.denied')).toEqual([
      expect.objectContaining({ reasonCode: 'tool_not_enabled' }),
    ]);
    expect(forged.events.map((e) => e.type)).not.toContain('tool.call.started');

    // The server default (allow) still offers the rest.
    const echo = await say('mcp_demo', 'call mcp.everything.echo with {"message":"granted"}');
    expect(dataOf(echo.events, 'tool.call.completed')).toHaveLength(1);
  });

  it('GET reads the effective grant; PUT replaces it (admin), audited as an event, and takes effect for new sessions', async () => {
    const before = await call(api.base, 'GET', '/v1/agents/mcp_demo/mcp-grants/everything');
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({
      agent_id: 'mcp_demo',
      server_id: 'everything',
      grant: { default: 'allow', tools: { get_env: 'deny' } },
      source: 'agent_file',
      revision: 0,
    });
    const none = await call(api.base, 'GET', '/v1/agents/general/mcp-grants/everything');
    expect(none.body).toMatchObject({ grant: null, source: 'none' });

    // The general agent has no grant: the tools are not offered.
    const denied = await say('general', 'call mcp.everything.echo with {"message":"x"}');
    expect(denied.events.map((e) => e.type)).not.toContain('tool.call.proposed');

    const put = await call(api.base, 'PUT', '/v1/agents/general/mcp-grants/everything', {
      body: { default: 'deny', tools: { echo: 'allow' } },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      grant: { default: 'deny', tools: { echo: 'allow' } },
      source: 'operator',
      revision: 1,
      updated_by: 'local-user',
    });
    const audit = await api.t.platform.db.query<{
      payload: Record<string, unknown>;
      actor_type: string;
      actor_id: string;
    }>("SELECT payload, actor_type, actor_id FROM events WHERE event_type = 'agent.mcp_grant.replaced'");
    expect(audit.rows).toEqual([
      {
        actor_type: 'admin',
        actor_id: 'local-user',
        payload: {
          agentId: 'general',
          serverId: 'everything',
          grant: { default: 'deny', tools: { echo: 'allow' }, rules: {} },
          previous: null,
          revision: 1,
        },
      },
    ]);

    const allowed = await say('general', 'call mcp.everything.echo with {"message":"now granted"}');
    expect(dataOf(allowed.events, 'tool.call.completed')).toHaveLength(1);
    const stillHidden = await say('general', 'call mcp.everything.get_sum with {"a":1,"b":2}');
    expect(stillHidden.events.map((e) => e.type)).not.toContain('tool.call.proposed');

    const again = await call(api.base, 'PUT', '/v1/agents/general/mcp-grants/everything', {
      body: { default: 'deny' },
    });
    expect(again.body).toMatchObject({ revision: 2, grant: { default: 'deny', tools: {} } });
    const revoked = await say('general', 'call mcp.everything.echo with {"message":"revoked"}');
    expect(revoked.events.map((e) => e.type)).not.toContain('tool.call.proposed');
  });

  it('bad grant input gets the error envelope and changes nothing', async () => {
    const count = await api.eventCount();
    const bad = [
      ['/v1/agents/general/mcp-grants/everything', { default: 'maybe' }, 400],
      ['/v1/agents/general/mcp-grants/everything', { default: 'allow', tools: { echo: 'sometimes' } }, 400],
      ['/v1/agents/general/mcp-grants/everything', { default: 'allow', tools: { 'Bad-Name': 'allow' } }, 400],
      ['/v1/agents/general/mcp-grants/everything', { default: 'allow', extra: 1 }, 400],
      ['/v1/agents/general/mcp-grants/nosuch', { default: 'allow' }, 404],
      ['/v1/agents/nosuch/mcp-grants/everything', { default: 'allow' }, 404],
    ] as const;
    for (const [p, body, status] of bad) {
      const r = await call(api.base, 'PUT', p, { body });
      expect([p, r.status]).toEqual([p, status]);
      expect(r.body.error).toMatchObject({ code: status === 400 ? 'validation_error' : 'not_found' });
    }
    expect(await api.eventCount()).toBe(count);
  });

  it('the admin scope is not part of the user token preset', () => {
    expect(expandScopes('user', []).scopes.has('admin')).toBe(false);
    expect(expandScopes(['admin'], []).scopes.has('admin')).toBe(true);
  });
});

describe('MCP operator routes', () => {
  it('GET /v1/mcp/servers reports state, protocol version and era, tool count, restarts and last error', async () => {
    const r = await call(api.base, 'GET', '/v1/mcp/servers');
    expect(r.status).toBe(200);
    expect(r.body.items).toEqual([
      expect.objectContaining({
        id: 'everything',
        transport: 'stdio',
        state: 'ready',
        protocol_version: '2025-11-25',
        protocol_era: 'legacy',
        restarts: 0,
        last_error: null,
        pid: expect.any(Number),
      }),
    ]);
    expect(r.body.items[0].tool_count).toBeGreaterThan(5);
    expect(r.body.items[0].disabled_tools).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'mcp.everything.gzip_file_as_resource' })]),
    );
  });

  it('restart, stop and start; a stopped server fails calls fast with the reason', async () => {
    const pid = api.t.platform.mcp.pidOf('everything');
    const restarted = await call(api.base, 'POST', '/v1/mcp/servers/everything/restart');
    expect(restarted.status).toBe(200);
    expect(restarted.body).toMatchObject({ state: 'ready', restarts: 1 });
    expect(restarted.body.pid).not.toBe(pid);

    const stopped = await call(api.base, 'POST', '/v1/mcp/servers/everything/stop');
    expect(stopped.body).toMatchObject({ state: 'stopped', pid: null });
    const failed = await say('mcp_demo', 'call mcp.everything.echo with {"message":"while stopped"}');
    expect(failed.status).toBe('completed');
    expect(dataOf(failed.events, 'tool.call.failed')).toEqual([
      expect.objectContaining({ errorCode: 'mcp_server_unavailable', message: expect.stringContaining('stopped') }),
    ]);

    const started = await call(api.base, 'POST', '/v1/mcp/servers/everything/start');
    expect(started.body).toMatchObject({ state: 'ready' });
    await until('ready', () => api.t.platform.mcp.status()[0].state === 'ready');
    const ok = await say('mcp_demo', 'call mcp.everything.echo with {"message":"started"}');
    expect(dataOf(ok.events, 'tool.call.completed')).toHaveLength(1);
  });

  it('unknown servers and actions are 404 in the envelope', async () => {
    expect((await call(api.base, 'POST', '/v1/mcp/servers/nosuch/restart')).status).toBe(404);
    const r = await call(api.base, 'POST', '/v1/mcp/servers/everything/explode');
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
  });
});
