import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform } from '../../support/platform';
import { call, startApi, type ApiHarness } from '../api/api-harness';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { EVERYTHING, makeConfigDir } from './mcp-support';

// Issue 34 item 4: per-agent argument rules on MCP tools, checked by policy before the call runs,
// through real runs (fake model "call … with …", real worker, real server-filesystem and
// server-everything over stdio, real PostgreSQL), from the agent file and from the operator API.
const FILESYSTEM = path.resolve(
  __dirname,
  '../../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
);
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let tdb: TestDb;
let api: ApiHarness;
let config: { dir: string; remove(): void };
let root: string;

const dataOf = (events: StoredEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);

async function say(agentId: string, text: string) {
  const session = await api.t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL, agentId));
  const { runId } = await api.t.submit(text, {}, session.id);
  const status = await api.t.waitForTerminal(runId, 30_000);
  return { status, events: await api.t.events(runId) };
}

const agentYaml = (id: string, mcpServers: string) => `
id: ${id}
version: 1
name: Argument rules demo
instructions: Use the MCP tools when asked.
model_policy: demo
enabled_tools: []
mcp_servers:
${mcpServers}
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

const mcpYaml = () => `
version: 1
servers:
  - id: filesystem
    transport: { type: stdio, command: '\${node}', args: ['${FILESYSTEM}', '${root}'] }
    call_timeout_seconds: 20
    tools:
      read_text_file: { side_effect: read, risk: low, idempotency: read_only }
  - id: everything
    transport: { type: stdio, command: '\${node}', args: ['${EVERYTHING}', 'stdio'] }
    classification: { side_effect: read, risk: low, idempotency: read_only }
`;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-mcp-rules-')));
  fs.mkdirSync(path.join(root, 'docs'));
  fs.writeFileSync(path.join(root, 'docs', 'guide.md'), 'the guide\n');
  fs.writeFileSync(path.join(root, 'secret.txt'), 'not for this agent\n');
  const ruled = agentYaml(
    'ruled',
    `  filesystem:
    default: allow
    rules:
      read_text_file:
        path: { type: string, pattern: '^${escape(root)}/docs/' }
        head: { type: integer, maximum: 100 }`,
  );
  config = makeConfigDir(mcpYaml(), {
    'ruled.yaml': ruled,
    'plain.yaml': agentYaml('plain', '  everything: { default: allow }'),
  });
  tdb = await createTestDb();
  api = await startApi(tdb.url, { configDir: config.dir, defaultAgentId: 'ruled' }, { worker: true });
});
afterAll(async () => {
  await api?.close();
  await tdb?.drop();
  config?.remove();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('argument rules from the agent file', () => {
  it('mcp.filesystem.read_text_file outside docs/ is denied before execution, naming the field; the model is told', async () => {
    const secret = path.join(root, 'secret.txt');
    const r = await say('ruled', `call mcp.filesystem.read_text_file with ${JSON.stringify({ path: secret })}`);
    expect(r.status).toBe('completed');
    const [denied] = dataOf(r.events, 'tool.call.denied');
    expect(denied).toMatchObject({ reasonCode: 'argument_rule' });
    expect(denied.explanation).toMatch(
      /^argument path of mcp\.filesystem\.read_text_file breaks agent ruled's argument rule: must match pattern/,
    );
    const types = r.events.map((e) => e.type);
    expect(types).not.toContain('tool.call.started');
    expect(JSON.stringify(r.events)).not.toContain('not for this agent');
    // The denial is what the model sees next (its following request carries it as the tool's answer).
    const lastAnswer = r.events.filter((e) => e.type === 'assistant.message.completed').pop();
    expect(JSON.stringify(lastAnswer?.data)).toMatch(/argument_rule|argument path/);
  });

  it('inside docs/ the same call runs and returns the file; a second rule (head ≤ 100) is checked too', async () => {
    const guide = path.join(root, 'docs', 'guide.md');
    const ok = await say('ruled', `call mcp.filesystem.read_text_file with ${JSON.stringify({ path: guide })}`);
    expect(dataOf(ok.events, 'tool.call.denied')).toEqual([]);
    expect(JSON.stringify(dataOf(ok.events, 'tool.call.completed'))).toContain('the guide');

    const big = await say(
      'ruled',
      `call mcp.filesystem.read_text_file with ${JSON.stringify({ path: guide, head: 500 })}`,
    );
    expect(dataOf(big.events, 'tool.call.denied')).toEqual([
      expect.objectContaining({
        reasonCode: 'argument_rule',
        explanation: expect.stringMatching(/argument head .*must be <= 100/),
      }),
    ]);
  });
});

describe('argument rules through the operator grant API', () => {
  it('PUT with rules is audited (the event carries them) and applies to the next run; inside the rule the call runs', async () => {
    const put = await call(api.base, 'PUT', '/v1/agents/plain/mcp-grants/everything', {
      body: { default: 'allow', rules: { echo: { message: { type: 'string', pattern: '^ok' } } } },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      grant: { default: 'allow', tools: {}, rules: { echo: { message: { type: 'string', pattern: '^ok' } } } },
      source: 'operator',
      revision: 1,
    });
    const audit = await api.t.platform.db.query<{ payload: Record<string, unknown>; payload_schema_version: number }>(
      "SELECT payload, payload_schema_version FROM events WHERE event_type = 'agent.mcp_grant.replaced'",
    );
    expect(audit.rows).toEqual([
      {
        payload_schema_version: 2,
        payload: {
          agentId: 'plain',
          serverId: 'everything',
          grant: { default: 'allow', tools: {}, rules: { echo: { message: { type: 'string', pattern: '^ok' } } } },
          previous: { default: 'allow', tools: {}, rules: {} },
          revision: 1,
        },
      },
    ]);

    const denied = await say('plain', 'call mcp.everything.echo with {"message":"no way"}');
    expect(dataOf(denied.events, 'tool.call.denied')).toEqual([
      expect.objectContaining({
        reasonCode: 'argument_rule',
        explanation: expect.stringContaining('argument message of mcp.everything.echo'),
      }),
    ]);
    const ok = await say('plain', 'call mcp.everything.echo with {"message":"ok then"}');
    expect(JSON.stringify(dataOf(ok.events, 'tool.call.completed'))).toContain('ok then');

    // Replacing the grant without rules lifts them.
    const lifted = await call(api.base, 'PUT', '/v1/agents/plain/mcp-grants/everything', {
      body: { default: 'allow' },
    });
    expect(lifted.body).toMatchObject({ revision: 2, grant: { rules: {} } });
    const free = await say('plain', 'call mcp.everything.echo with {"message":"no way"}');
    expect(dataOf(free.events, 'tool.call.completed')).toHaveLength(1);
  });

  it('a rule that is not a valid schema is refused in the envelope naming the field, and nothing changes', async () => {
    const count = await api.eventCount();
    const bad: [unknown, string][] = [
      [{ echo: { message: { type: 'string', patern: '^ok' } } }, 'rules.echo.message'],
      [{ echo: { message: { type: 'string', pattern: '([' } } }, 'rules.echo.message'],
      [{ echo: { message: 'ok' } }, 'rules.echo.message'],
      [{ echo: ['message'] }, 'rules.echo'],
      [{ 'Not-A-Tool': {} }, 'rules.Not-A-Tool'],
    ];
    for (const [rules, field] of bad) {
      const r = await call(api.base, 'PUT', '/v1/agents/plain/mcp-grants/everything', {
        body: { default: 'allow', rules },
      });
      expect([field, r.status, r.body.error?.code]).toEqual([field, 400, 'validation_error']);
      expect(r.body.error.message).toContain(`${field}:`);
    }
    expect(await api.eventCount()).toBe(count);
    const now = await call(api.base, 'GET', '/v1/agents/plain/mcp-grants/everything');
    expect(now.body).toMatchObject({ revision: 2, grant: { rules: {} } });
  });
});

describe('argument rules: a bad rule in an agent file', () => {
  it('refuses startup naming the agent and the field', async () => {
    const bad = agentYaml(
      'badrule',
      `  everything:
    default: allow
    rules:
      echo:
        message: { type: string, maxLength: -1 }`,
    );
    const dir = makeConfigDir(mcpYaml(), { 'badrule.yaml': bad });
    const db = await createTestDb();
    try {
      await expect(createTestPlatform(db.url, { configDir: dir.dir })).rejects.toThrow(
        /agent badrule: mcp_servers\.everything\.rules\.echo\.message: is not a valid JSON Schema/,
      );
    } finally {
      await db.drop();
      dir.remove();
    }
  });
});
