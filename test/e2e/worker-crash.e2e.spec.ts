import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../support/processes';

let tdb: TestDb;
let t: TestPlatform;
const procs: Proc[] = [];

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url);
});
afterAll(async () => {
  for (const p of procs) p.child.kill('SIGKILL');
  await t.close();
  await tdb.drop();
});

describe('a worker killed with SIGKILL', () => {
  it('loses nothing: another worker finishes the run once, with one answer and one calculator execution', async () => {
    const env = {
      DATABASE_URL: tdb.url,
      AGENT_LEASE_SECONDS: '3',
      FAKE_MODEL_LATENCY_MS: '800',
      AGENT_POLL_INTERVAL_MS: '500',
    };
    const first = startAgent(['worker'], env);
    procs.push(first);
    const { runId } = await t.submit('What is 17 multiplied by 23?');
    // Wait for the first checkpoint (written with the first model response), then kill -9.
    await waitFor(
      'the first checkpoint',
      async () => (await t.platform.checkpoints.latest(runId)) !== null,
      30_000,
      20,
    ).catch((e: Error) => {
      throw new Error(`${e.message}; worker output:\n${first.output()}`);
    });
    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull();
    const second = startAgent(['worker'], env);
    procs.push(second);
    expect(await t.waitForTerminal(runId, 60_000)).toBe('completed');
    second.child.kill('SIGTERM');
    await second.exited;
    const events = await t.events(runId);
    expect(events.filter((e) => e.type === 'assistant.message.completed')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'run.completed')).toHaveLength(1);
    // The calculator ran to completion once per distinct call. (A kill that lands while the read-only
    // calculator is executing legitimately re-runs it — plan §8.4 — but never completes it twice.)
    const completed = events.filter((e) => e.type === 'tool.call.completed');
    const proposed = new Set(
      events
        .filter((e) => e.type === 'tool.call.proposed')
        .map((e) => (e.type === 'tool.call.proposed' ? e.data.invocationId : '')),
    );
    expect(completed.length).toBe(proposed.size);
    expect(new Set(completed.map((e) => (e.type === 'tool.call.completed' ? e.data.invocationId : ''))).size).toBe(
      proposed.size,
    );
    expect(events.filter((e) => e.type === 'run.claimed').length).toBe(2);
    expect((await t.platform.runs.get(runId, null))?.finalText).toBe('The result is 391.');
  });
});
