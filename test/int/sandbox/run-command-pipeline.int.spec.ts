import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { NamespaceExecutionEnvironment } from '../../../src/adapters/sandbox/namespace-environment';
import { SandboxService } from '../../../src/adapters/sandbox/sandbox-service';
import { DEFAULT_ENV_ALLOWLIST } from '../../../src/domain/sandbox/request-checks';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Worker } from '../../../src/runtime/worker';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

/**
 * sandbox.run_command through the real pipeline (demo model → policy → tool → port → unix socket →
 * execution service → bubblewrap) with a real PostgreSQL and a real artifact store.
 */
const runnable = fs.existsSync('/usr/bin/bwrap') && fs.existsSync('/usr/bin/python3');
const d = runnable ? describe : describe.skip;

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let dir: string;
let service: SandboxService;
const saved = { socket: process.env.SANDBOX_SOCKET, adapter: process.env.SANDBOX_ADAPTER };

const of = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
  events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);
const finalText = async (runId: string) => (await t.platform.runs.get(runId, null))?.finalText ?? '';

beforeAll(async () => {
  if (!runnable) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-pipe-'));
  fs.chmodSync(dir, 0o755);
  const socketPath = path.join(dir, 'run', 'sandboxd.sock');
  service = new SandboxService({
    socketPath,
    adapter: new NamespaceExecutionEnvironment({
      root: path.join(dir, 'sandboxes'),
      envAllowlist: DEFAULT_ENV_ALLOWLIST,
    }),
    log: silentLogger,
  });
  await service.start();
  process.env.SANDBOX_SOCKET = socketPath;
  process.env.SANDBOX_ADAPTER = 'namespace';
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 5, pollIntervalMs: 200, dataDir: dir });
  worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 200, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  if (!runnable) return;
  await worker.stop();
  await t.close();
  await tdb.drop();
  await service.stop();
  process.env.SANDBOX_SOCKET = saved.socket;
  process.env.SANDBOX_ADAPTER = saved.adapter;
  if (saved.socket === undefined) delete process.env.SANDBOX_SOCKET;
  if (saved.adapter === undefined) delete process.env.SANDBOX_ADAPTER;
  fs.rmSync(dir, { recursive: true, force: true });
});

d('sandbox.run_command in a run', () => {
  it('the demo "run python3 -c print(2+2)" answers with 4, labelled untrusted', async () => {
    const r = await t.submit('run python3 -c print(2+2)');
    expect(await t.waitForTerminal(r.runId, 60_000)).toBe('completed');
    const events = await t.events(r.runId);
    expect(of(events, 'tool.call.authorized')[0].data).toMatchObject({
      decision: 'allow',
      reasonCode: 'execute_in_sandbox',
    });
    const done = of(events, 'tool.call.completed')[0].data;
    expect(done.trust).toBe('external_untrusted');
    expect(done.result).toMatchObject({
      trust: 'external_untrusted',
      data: { exit_code: 0, stdout: '4\n', timed_out: false, kill_reason: 'exited', files_changed: [] },
    });
    expect(await finalText(r.runId)).toContain(': 4');
  });

  it('a file the command writes comes back to the session workspace with its size and SHA-256', async () => {
    const r = await t.submit(`run python3 -c "open('out.txt','w').write('hello sandbox')"`);
    expect(await t.waitForTerminal(r.runId, 60_000)).toBe('completed');
    const result = of(await t.events(r.runId), 'tool.call.completed')[0].data.result as {
      data: { files_changed: { path: string; size_bytes: number; sha256: string }[] };
    };
    expect(result.data.files_changed).toEqual([
      {
        path: 'out.txt',
        size_bytes: 13,
        sha256: createHash('sha256').update('hello sandbox').digest('hex'),
      },
    ]);
    const file = path.join(dir, 'workspaces', 'local', r.sessionId, 'out.txt');
    expect(fs.readFileSync(file, 'utf8')).toBe('hello sandbox');
    // The next command in the session sees it (seeded into a fresh sandbox).
    const again = await t.submit('run cat out.txt', {}, r.sessionId);
    expect(await t.waitForTerminal(again.runId, 60_000)).toBe('completed');
    expect(await finalText(again.runId)).toContain('hello sandbox');
  });

  it('long output is cut to an excerpt; the full text is an artifact', async () => {
    const r = await t.submit(`run python3 -c "print('x' * 20000)"`);
    expect(await t.waitForTerminal(r.runId, 60_000)).toBe('completed');
    const events = await t.events(r.runId);
    const data = (of(events, 'tool.call.completed')[0].data.result as { data: Record<string, unknown> }).data;
    expect(data.stdout_truncated).toBe(true);
    expect(data.stdout_bytes).toBe(20001);
    expect((data.stdout as string).length).toBe(4096);
    const ref = data.stdout_artifact as { artifact_id: string; size_bytes: number; sha256: string };
    expect(ref.size_bytes).toBe(20001);
    const created = of(events, 'artifact.created').map((e) => e.data as { artifactId: string; name: string });
    expect(created).toEqual(
      expect.arrayContaining([expect.objectContaining({ artifactId: ref.artifact_id, name: 'stdout.txt' })]),
    );
  });

  it('a shell string is refused before anything runs, as a structured tool result', async () => {
    const r = await t.submit('call sandbox.run_command with {"command": "ls -la; cat /etc/passwd"}');
    expect(await t.waitForTerminal(r.runId, 60_000)).toBe('completed');
    const events = await t.events(r.runId);
    expect(of(events, 'tool.call.started')).toHaveLength(0);
    expect(of(events, 'tool.call.failed')[0].data).toMatchObject({ errorCode: 'shell_string_refused' });
    expect(await finalText(r.runId)).toMatch(/argument vector/);
  });

  it.each([
    [
      'a working directory outside the workspace',
      '{"command": ["ls"], "working_directory": "../other"}',
      'path_outside_workspace',
    ],
    ['a negative timeout', '{"command": ["ls"], "timeout_seconds": -5}', 'invalid_timeout'],
    ['a huge timeout', '{"command": ["ls"], "timeout_seconds": 100000000}', 'invalid_timeout'],
    ['an unknown variable', '{"command": ["env"], "env": {"HOSTILE": "1"}}', 'env_not_allowed'],
    [
      'an oversized argument vector',
      JSON.stringify({ command: ['echo', ...Array.from({ length: 300 }, () => 'a')] }),
      'argv_too_large',
    ],
  ])('%s is refused before anything runs', async (_what, args, code) => {
    const r = await t.submit(`call sandbox.run_command with ${args}`);
    expect(await t.waitForTerminal(r.runId, 60_000)).toBe('completed');
    const events = await t.events(r.runId);
    expect(of(events, 'tool.call.started')).toHaveLength(0);
    expect(of(events, 'tool.call.failed')[0].data).toMatchObject({ errorCode: code });
  });
});
