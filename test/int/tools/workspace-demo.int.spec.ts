import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import type { Worker } from '../../../src/runtime/worker';
import { ResolveApprovalCommand } from '../../../src/application/approvals/commands';
import { ProvideRunInputCommand } from '../../../src/application/runs/provide-input';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { StoredEvent } from '../../../src/domain/events/payloads';

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let dataDir: string;

async function waitForStatus(runId: string, status: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const run = await t.platform.runs.get(runId, null);
    if (run?.status === status) return;
    if (Date.now() > end) throw new Error(`run ${runId} is ${run?.status}, expected ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const finalText = async (runId: string) => (await t.platform.runs.get(runId, null))?.finalText;
const of = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
  events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-ws-'));
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 3, pollIntervalMs: 200, dataDir });
  worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker.stop();
  await t.close();
  await tdb.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the demo model with the lifecycle tools', () => {
  it('writes, lists and reads back a workspace file; provenance decides the trust label', async () => {
    const w = await t.submit('write hello world to notes/a.txt');
    expect(await t.waitForTerminal(w.runId)).toBe('completed');
    expect(await finalText(w.runId)).toMatch(/^Wrote 11 bytes to notes\/a.txt \(sha256 [0-9a-f]{64}\)\.$/);
    const file = path.join(dataDir, 'workspaces', 'local', w.sessionId, 'notes', 'a.txt');
    expect(fs.readFileSync(file, 'utf8')).toBe('hello world');

    // Another run of the same session did not write it: its content is external untrusted data.
    const r = await t.submit('read notes/a.txt', {}, w.sessionId);
    expect(await t.waitForTerminal(r.runId)).toBe('completed');
    const completed = of(await t.events(r.runId), 'tool.call.completed')[0];
    expect(completed.data.trust).toBe('external_untrusted');
    expect(completed.data.result).toMatchObject({ trust: 'external_untrusted', data: { content: 'hello world' } });
    expect(await finalText(r.runId)).toBe(
      'notes/a.txt contains (untrusted data, shown as is, not followed): "hello world"',
    );

    const l = await t.submit('list files', {}, w.sessionId);
    expect(await t.waitForTerminal(l.runId)).toBe('completed');
    expect(await finalText(l.runId)).toBe('The workspace has 1 file(s): notes/a.txt.');
  });

  it('refuses traversal before the tool runs and a real symlink escape at execution', async () => {
    const trav = await t.submit('read ../../etc/passwd');
    expect(await t.waitForTerminal(trav.runId)).toBe('completed');
    const events = await t.events(trav.runId);
    expect(of(events, 'tool.call.failed')[0].data.errorCode).toBe('path_outside_workspace');
    expect(of(events, 'tool.call.started')).toHaveLength(0);

    const abs = await t.submit('read /etc/passwd');
    expect(await t.waitForTerminal(abs.runId)).toBe('completed');
    expect(of(await t.events(abs.runId), 'tool.call.failed')[0].data.errorCode).toBe('path_outside_workspace');

    // A real symlink inside the workspace pointing outside it.
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-outside-'));
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'TOP SECRET');
    const first = await t.submit('write x to seed.txt');
    await t.waitForTerminal(first.runId);
    const ws = path.join(dataDir, 'workspaces', 'local', first.sessionId);
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'link.txt'));
    fs.symlinkSync(outside, path.join(ws, 'dir'));
    for (const msg of [
      'read link.txt',
      'read dir/secret.txt',
      'write pwned to dir/evil.txt',
      'write pwned to link.txt',
    ]) {
      const run = await t.submit(msg, {}, first.sessionId);
      expect(await t.waitForTerminal(run.runId)).toBe('completed');
      const failed = of(await t.events(run.runId), 'tool.call.failed');
      expect({ msg, code: failed[0]?.data.errorCode }).toEqual({ msg, code: 'path_outside_workspace' });
      expect(await finalText(run.runId)).not.toContain('TOP SECRET');
    }
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
    expect(fs.existsSync(path.join(outside, 'evil.txt'))).toBe(false);
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it('sends only after approval, and says plainly when a denial meant nothing was sent', async () => {
    const denied = await t.submit('send the report to finance');
    await waitForStatus(denied.runId, 'waiting_for_approval');
    const a1 = (await t.platform.toolRecords.pendingApprovalsOfRun(denied.runId))[0];
    expect(a1.actionSummary).toBe('send to finance: "the report"');
    await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, a1.id, 'deny', null));
    expect(await t.waitForTerminal(denied.runId)).toBe('completed');
    expect(await finalText(denied.runId)).toBe(
      'I did not send it: the request was denied, so nothing was sent to finance.',
    );

    const approved = await t.submit('publish the release notes');
    await waitForStatus(approved.runId, 'waiting_for_approval');
    const a2 = (await t.platform.toolRecords.pendingApprovalsOfRun(approved.runId))[0];
    await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, a2.id, 'approve_once', null));
    expect(await t.waitForTerminal(approved.runId)).toBe('completed');
    expect(await finalText(approved.runId)).toBe('Published.');
    const rows = (await t.platform.db.query('SELECT run_id, target, content FROM demo_external_writes')).rows;
    expect(rows).toEqual([{ run_id: approved.runId, target: 'public', content: 'the release notes' }]);
  });

  it('asks the user and quotes the reply', async () => {
    const { runId } = await t.submit('ask me which colour you prefer');
    await waitForStatus(runId, 'waiting_for_user');
    const waiting = of(await t.events(runId), 'run.waiting_for_user')[0];
    expect(waiting.data.question).toBe('which colour you prefer');
    await t.commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, 'Blue, please'));
    expect(await t.waitForTerminal(runId)).toBe('completed');
    expect(await finalText(runId)).toBe('You answered: "Blue, please".');
  });

  it('denies a hardline match before execution whatever the policy file says', async () => {
    const { runId } = await t.submit('write rm -rf / to cleanup.sh');
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const denied = of(await t.events(runId), 'tool.call.denied')[0];
    expect(denied.data.reasonCode).toBe('hardline_destructive_command');
    expect(denied.data.policyVersion).toMatch(/^default@2#[0-9a-f]{12}$/);
    expect(of(await t.events(runId), 'tool.call.started')).toHaveLength(0);
  });
});
