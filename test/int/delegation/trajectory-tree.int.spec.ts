import { CreateSessionCommand } from '../../../src/application/sessions/create-session';
import { SubmitMessageCommand, type RunOverrides } from '../../../src/application/runs/submit-message';
import { LOCAL_PRINCIPAL, type Principal } from '../../../src/domain/principal';
import type { TrajectoryDocument } from '../../../src/domain/trajectory/document';
import type { ExportFilters } from '../../../src/ports/trajectory';
import type { Worker } from '../../../src/runtime/worker';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';

/** Trajectory export includes the run tree (issue 32 item 6): child runs nested under their parent. */
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
const alice: Principal = { ...LOCAL_PRINCIPAL, principalId: 'alice' };

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { delegationEnabled: true, leaseSeconds: 3, pollIntervalMs: 100 });
  worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 100, drainMs: 5000 });
  await worker.start();
  await t.platform.trajectories.consent.grant('local', 'alice', 'test');
});
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await tdb?.drop();
});

async function runAs(text: string, overrides: RunOverrides = {}): Promise<string> {
  const session = await t.commands.execute(new CreateSessionCommand(alice));
  const r = await t.commands.execute(new SubmitMessageCommand(alice, session.id, text, null, overrides));
  expect(await t.waitForTerminal(r.runId, 30_000)).toBe('completed');
  return r.runId;
}

async function exported(filters: Partial<ExportFilters>): Promise<TrajectoryDocument[]> {
  const lines: string[] = [];
  await t.platform.trajectories.exporter.export('local', { status: 'all', ...filters }, async (chunk) => {
    lines.push(...chunk.split('\n').filter((l) => l !== ''));
  });
  return lines.map((l) => JSON.parse(l) as TrajectoryDocument);
}

describe('trajectory export of a run tree', () => {
  it("nests a delegating run's children under it, each a full document naming its parent", async () => {
    const runId = await runAs('Delegate two tasks.', { modelPolicy: 'fake:delegate_two_children' });
    const children = await t.platform.childRunStore.childrenOf(runId, null);
    const [doc] = await exported({ runId });
    expect(doc.run_id).toBe(runId);
    expect(doc.parent_run_id).toBeUndefined();
    expect(doc.children!.map((c) => c.run_id)).toEqual(children.map((c) => c.runId));
    for (const [i, c] of doc.children!.entries()) {
      expect(c).toEqual(
        expect.objectContaining({
          parent_run_id: runId,
          session_id: children[i].sessionId,
          outcome: expect.objectContaining({ label: 'succeeded', status: 'completed' }),
        }),
      );
      expect(c.messages.find((m) => m.role === 'user')?.content).toContain(i === 0 ? 'first task' : 'second task');
      expect(c.messages.at(-1)).toEqual({ role: 'assistant', content: 'Both delegated tasks are done.' });
      expect(c.children).toBeUndefined();
    }
    // The parent's own conversation holds the delegate.run call and its joined result, never a transcript.
    expect(doc.messages.filter((m) => m.role === 'tool').map((m) => (m as { name: string }).name)).toEqual([
      'delegate.run',
    ]);
    // A child exported on its own is the same document.
    const [alone] = await exported({ runId: children[0].runId });
    expect(alone).toEqual(doc.children![0]);
  });

  it("nests a consensus run's engines and synthesizer, in round order", async () => {
    const runId = await runAs('consensus: what is 3 times 4');
    const [doc] = await exported({ runId });
    expect(doc.children).toHaveLength(3);
    const texts = doc.children!.map((c) => c.messages.at(-1)?.content);
    expect(texts[0]).toBe('Engine 1 proposes: the answer is the value of 3 * 4.');
    expect(texts[1]).toBe('Engine 2 proposes: the answer is the value of 3 * 4.');
    expect(texts[2]).toMatch(/^Consensus of 2 proposal\(s\)/);
    expect(doc.messages.at(-1)).toEqual({ role: 'assistant', content: texts[2] });
  });

  it('leaves documents of runs without children as they were', async () => {
    const runId = await runAs('What is 17 multiplied by 23?');
    const [doc] = await exported({ runId });
    expect(Object.keys(doc)).not.toContain('children');
    expect(Object.keys(doc)).not.toContain('parent_run_id');
  });
});
