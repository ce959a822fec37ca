import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, isSubsequence, type TestPlatform } from '../../support/platform';
import type { Worker } from '../../../src/runtime/worker';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { ResolveApprovalCommand } from '../../../src/application/approvals/commands';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { makeConfigDir, until } from './mcp-support';

// Acceptance (issue #10): @modelcontextprotocol/server-filesystem from npm over stdio on a temp
// directory; its write tool is classified as an external write in mcp.yaml, so a call waits for
// approval and nothing is written until an operator approves it.
const FILESYSTEM = path.resolve(
  __dirname,
  '../../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
);
const FS_AGENT = `
id: fs_demo
version: 1
name: Filesystem demo
instructions: Use the filesystem tools when asked.
model_policy: demo
enabled_tools: []
mcp_servers: [filesystem]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let config: { dir: string; remove(): void };
let root: string;

const dataOf = (events: StoredEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);

beforeAll(async () => {
  // The server resolves symlinks in its allowed directories; use the real path.
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-mcp-fs-')));
  fs.writeFileSync(path.join(root, 'hello.txt'), 'hello from the fixture\n');
  const mcpYaml = `
version: 1
servers:
  - id: filesystem
    transport:
      type: stdio
      command: \${node}
      args: ['${FILESYSTEM}', '${root}']
    call_timeout_seconds: 20
    tools:
      read_text_file: { side_effect: read, risk: low, idempotency: read_only }
      write_file: { side_effect: external_write, risk: high, idempotency: non_idempotent }
`;
  config = makeConfigDir(mcpYaml, { 'fs_demo.yaml': FS_AGENT });
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { configDir: config.dir, defaultAgentId: 'fs_demo', pollIntervalMs: 100 });
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
  config?.remove();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe('server-filesystem over stdio', () => {
  it('discovers the tools with the configured classification', () => {
    expect(t.platform.registry.get('mcp.filesystem.write_file')?.spec).toMatchObject({
      sideEffect: 'external_write',
      idempotency: 'non_idempotent',
    });
    expect(t.platform.registry.get('mcp.filesystem.read_text_file')?.spec).toMatchObject({
      sideEffect: 'read',
      idempotency: 'read_only',
    });
  });

  it('a read tool classified read-only is allowed without approval', async () => {
    const file = path.join(root, 'hello.txt');
    const { runId } = await t.submit(`call mcp.filesystem.read_text_file with ${JSON.stringify({ path: file })}`);
    expect(await t.waitForTerminal(runId, 30_000)).toBe('completed');
    const events = await t.events(runId);
    expect(events.map((e) => e.type)).not.toContain('approval.requested');
    expect(JSON.stringify(dataOf(events, 'tool.call.completed'))).toContain('hello from the fixture');
  });

  it('the write tool, classified as an external write, waits for approval; nothing is written until approved', async () => {
    const file = path.join(root, 'written.txt');
    const { runId } = await t.submit(
      `call mcp.filesystem.write_file with ${JSON.stringify({ path: file, content: 'approved content' })}`,
    );
    await until(
      'waiting_for_approval',
      async () => (await t.platform.runs.get(runId, null))?.status === 'waiting_for_approval',
      30_000,
    );
    const before = (await t.events(runId)).map((e) => e.type);
    expect(isSubsequence(['tool.call.proposed', 'approval.requested', 'run.waiting_for_approval'], before)).toBe(true);
    expect(before).not.toContain('tool.call.started');
    expect(fs.existsSync(file)).toBe(false);

    const [approval] = await t.platform.toolRecords.pendingApprovalsOfRun(runId);
    expect(approval.toolName).toBe('mcp.filesystem.write_file');
    const r = await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'approve_once', null));
    expect(r).toMatchObject({ status: 'approved', run: 'resumed' });
    expect(await t.waitForTerminal(runId, 30_000)).toBe('completed');
    expect(fs.readFileSync(file, 'utf8')).toBe('approved content');
    const after = (await t.events(runId)).map((e) => e.type);
    expect(
      isSubsequence(['approval.resolved', 'tool.call.started', 'tool.call.completed', 'run.completed'], after),
    ).toBe(true);
  });
});
