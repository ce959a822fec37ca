import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import type { Worker } from '../../../src/runtime/worker';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { capturingLogger, EVERYTHING, makeConfigDir, MCP_AGENT, until } from './mcp-support';

// server-everything from npm over stdio, through the real run loop, worker and policy.
const MCP_YAML = `
version: 1
servers:
  - id: everything
    transport:
      type: stdio
      command: \${node}
      args: ['${EVERYTHING}', 'stdio']
      env_allowlist: []
    call_timeout_seconds: 20
    max_output_bytes: 4096
    tools:
      echo: { side_effect: read, risk: low, idempotency: read_only }
      trigger-long-running-operation: { side_effect: read, risk: low, idempotency: read_only }
`;

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let config: { dir: string; remove(): void };
const log = capturingLogger();

const dataOf = (events: StoredEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);

async function runText(text: string): Promise<{ runId: string; events: StoredEvent[]; status: string }> {
  const { runId } = await t.submit(text);
  const status = await t.waitForTerminal(runId, 30_000);
  return { runId, status, events: await t.events(runId) };
}

beforeAll(async () => {
  config = makeConfigDir(MCP_YAML, { 'mcp_demo.yaml': MCP_AGENT });
  fs.writeFileSync(
    path.join(config.dir, 'model-fixtures', 'forged_mcp_call.yaml'),
    `name: forged_mcp_call
description: a call to an MCP tool the agent was not offered
turns:
  - tool_calls:
      - name: mcp.everything.echo
        arguments: { message: "forged" }
  - text: "done"
`,
  );
  tdb = await createTestDb();
  t = await createTestPlatform(
    tdb.url,
    { configDir: config.dir, defaultAgentId: 'mcp_demo', leaseSeconds: 5, pollIntervalMs: 100 },
    // A 2.5 s base delay (default 1 s) keeps the "call while restarting" window wide on a slow machine.
    { logger: log, mcpRestartPolicy: { baseDelayMs: 2500, maxDelayMs: 30_000, maxRestarts: 5, windowMs: 300_000 } },
  );
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
  config?.remove();
});

describe('MCP over stdio: server-everything', () => {
  it('registers its tools as mcp.everything.* and disables a tool whose schema Ajv cannot compile, with a logged reason', () => {
    const names = t.platform.registry.list().map((x) => x.spec.name);
    expect(names).toEqual(
      expect.arrayContaining(['mcp.everything.echo', 'mcp.everything.get_sum', 'mcp.everything.get_env']),
    );
    expect(names.filter((n) => n.startsWith('mcp.')).every((n) => /^mcp\.everything\.[a-z][a-z0-9_]*$/.test(n))).toBe(
      true,
    );
    // gzip-file-as-resource uses `format: uri`, which strict Ajv (no formats plugin) refuses.
    expect(names).not.toContain('mcp.everything.gzip_file_as_resource');
    expect(log.records).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        msg: 'mcp tool disabled',
        fields: expect.objectContaining({
          tool: 'mcp.everything.gzip_file_as_resource',
          reason: expect.stringMatching(/format/),
        }),
      }),
    );
    expect(t.platform.registry.get('mcp.everything.echo')?.spec).toMatchObject({
      sideEffect: 'read',
      idempotency: 'read_only',
    });
    expect(t.platform.mcp.status()).toEqual([expect.objectContaining({ id: 'everything', state: 'ready' })]);
  });

  it('"call mcp.everything.echo with {...}" completes through policy and the result is labelled untrusted', async () => {
    const { status, events } = await runText('call mcp.everything.echo with {"message":"hi"}');
    expect(status).toBe('completed');
    const proposed = dataOf(events, 'tool.call.proposed');
    expect(proposed).toEqual([
      expect.objectContaining({ toolName: 'mcp.everything.echo', arguments: { message: 'hi' } }),
    ]);
    expect(events.map((e) => e.type)).not.toContain('approval.requested');
    const [completed] = dataOf(events, 'tool.call.completed');
    expect(completed.trust).toBe('external_untrusted');
    expect(completed.result).toMatchObject({
      trust: 'external_untrusted',
      notice: expect.any(String),
      data: { server: 'everything', tool: 'echo', content: [{ type: 'text', text: 'Echo: hi' }] },
    });
    // The demo model's answer quotes it as data, labelled untrusted.
    expect(JSON.stringify(events)).toContain(
      'mcp.everything.echo returned (untrusted data, shown as is, not followed)',
    );
  });

  it('resources are readable through mcp.everything.read_resource, labelled untrusted; an unknown URI is a structured failure', async () => {
    expect(t.platform.registry.get('mcp.everything.read_resource')?.spec).toMatchObject({
      sideEffect: 'read',
      idempotency: 'read_only',
    });
    const { status, events } = await runText(
      'call mcp.everything.read_resource with {"uri":"demo://resource/static/document/features.md"}',
    );
    expect(status).toBe('completed');
    const [completed] = dataOf(events, 'tool.call.completed');
    expect(completed.trust).toBe('external_untrusted');
    expect(JSON.stringify(completed.result)).toContain('demo://resource/static/document/features.md');
    const missing = await runText('call mcp.everything.read_resource with {"uri":"demo://nope/nothing"}');
    expect(missing.status).toBe('completed');
    expect(dataOf(missing.events, 'tool.call.failed')).toEqual([
      expect.objectContaining({ errorCode: 'mcp_resource_error' }),
    ]);
  });

  it('the child gets only the allowlisted environment (nothing else)', async () => {
    process.env.MCP_TEST_SECRET = 'not-for-the-child';
    try {
      const tool = t.platform.registry.get('mcp.everything.get_env')!;
      // get_env is unclassified → external write → approval; call the adapter directly to read the env.
      const r = await tool.execute({}, { signal: new AbortController().signal } as never);
      expect(r.ok).toBe(true);
      const text = JSON.stringify(r.ok ? r.output : null);
      expect(text).not.toContain('MCP_TEST_SECRET');
      expect(text).not.toContain('"HOME');
      expect(text).not.toContain('"PATH');
    } finally {
      delete process.env.MCP_TEST_SECRET;
    }
  });

  it('an unclassified tool is an external write and waits for approval', async () => {
    expect(t.platform.registry.get('mcp.everything.get_sum')?.spec).toMatchObject({
      sideEffect: 'external_write',
      idempotency: 'non_idempotent',
    });
    const { runId } = await t.submit('call mcp.everything.get_sum with {"a":1,"b":2}');
    await until(
      'waiting_for_approval',
      async () => (await t.platform.runs.get(runId, null))?.status === 'waiting_for_approval',
    );
    const events = await t.events(runId);
    expect(events.map((e) => e.type)).toContain('approval.requested');
    expect(events.map((e) => e.type)).not.toContain('tool.call.started');
  });

  it('SIGKILL between calls: structured failure, restart with backoff, next call succeeds', async () => {
    const pid = t.platform.mcp.pidOf('everything')!;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    await until('the supervisor noticing the exit', () => t.platform.mcp.status()[0].state === 'backoff');

    const failed = await runText('call mcp.everything.echo with {"message":"while down"}');
    expect(failed.status).toBe('completed'); // the run continues past the failed tool call
    expect(dataOf(failed.events, 'tool.call.failed')).toEqual([
      expect.objectContaining({ errorCode: 'mcp_server_unavailable', message: expect.stringContaining('everything') }),
    ]);

    await until('restart', () => t.platform.mcp.status()[0].state === 'ready', 10_000);
    expect(t.platform.mcp.pidOf('everything')).not.toBe(pid);
    expect(t.platform.mcp.status()[0].restarts).toBeGreaterThanOrEqual(1);
    const ok = await runText('call mcp.everything.echo with {"message":"back"}');
    expect(dataOf(ok.events, 'tool.call.completed')[0].result).toMatchObject({
      data: { content: [{ type: 'text', text: 'Echo: back' }] },
    });
  });

  it('SIGKILL during a call: the call ends as a structured failure, the run completes, the next call succeeds', async () => {
    await until('ready', () => t.platform.mcp.status()[0].state === 'ready', 10_000);
    const { runId: longRun } = await t.submit(
      'call mcp.everything.trigger_long_running_operation with {"duration":10,"steps":2}',
    );
    await until('tool.call.started', async () => (await t.events(longRun)).some((e) => e.type === 'tool.call.started'));
    const pid = t.platform.mcp.pidOf('everything')!;
    process.kill(pid, 'SIGKILL');
    expect(await t.waitForTerminal(longRun, 30_000)).toBe('completed');
    const events = await t.events(longRun);
    expect(dataOf(events, 'tool.call.failed')).toEqual([
      expect.objectContaining({
        errorCode: 'mcp_server_unavailable',
        message: expect.stringContaining('server_id=everything'),
      }),
    ]);
    await until('restart', () => t.platform.mcp.status()[0].state === 'ready', 15_000);
    const ok = await runText('call mcp.everything.echo with {"message":"after crash"}');
    expect(ok.status).toBe('completed');
    expect(dataOf(ok.events, 'tool.call.completed')).toHaveLength(1);
  });

  it('an agent without a grant never sees MCP tools, and a forged call to one is denied before execution', async () => {
    expect((await t.platform.agents.current('mcp_demo'))?.mcpServers).toEqual(['everything']);
    expect((await t.platform.agents.current('general'))?.mcpServers ?? []).toEqual([]);
    const session = await t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL, 'general'));
    // The fake fixture forges a call to an MCP tool the general agent is not granted.
    const { runId } = await t.submit('forge', { modelPolicy: 'fake:forged_mcp_call' }, session.id);
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const events = await t.events(runId);
    expect(dataOf(events, 'tool.call.denied')).toEqual([expect.objectContaining({ reasonCode: 'tool_not_enabled' })]);
    expect(events.map((e) => e.type)).not.toContain('tool.call.started');
    // The demo model only calls offered tools: for the general agent it is not in the request.
    const asked = await t.submit('call mcp.everything.echo with {"message":"x"}', {}, session.id);
    expect(await t.waitForTerminal(asked.runId)).toBe('completed');
    const askedEvents = await t.events(asked.runId);
    expect(askedEvents.map((e) => e.type)).not.toContain('tool.call.proposed');
    expect(JSON.stringify(askedEvents)).toContain('I would need the mcp.everything.echo tool');
  });
});
