import { ContextEngine } from '../../src/context/engine';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { Worker } from '../../src/runtime/worker';
import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';

/**
 * The run loop hands the context engine the events its lease just committed (`noteAppended`), so a
 * step's build after the run's own writes does not read the session log back, and the claim hands
 * it the session's latest events (`ClaimPreload.sessionTail`, `noteRead`), so the run's first build
 * does not either when they continue the fold or start the session (ADR 0013). Through the real
 * worker, run loop and event store: the calculator turn (two builds) reads nothing, and the fold
 * the engine kept is byte for byte the fold a fresh engine reads from the log - the calculator's
 * output `{ expression, result }` comes back from jsonb as `{ result, expression }`, so a fold that
 * took payloads as they came would differ (the fold takes them in canonical form, ADR 0026).
 */
/** The units as text, without the token counts a build memoises on them (estimates, not content). */
function content(units: readonly object[]): string {
  return JSON.stringify(units, (k, v: unknown) => (k === 'tokens' || k === 'countedBy' ? undefined : v));
}

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { pollIntervalMs: 200 });
  worker = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 200, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker.stop();
  await t.close();
  await tdb.drop();
});

describe('the context fold fed by the run loop', () => {
  it('reads nothing for a new session’s two-step turn, and folds exactly what the log holds', async () => {
    const reads = jest.spyOn(t.platform.store, 'listAfter');
    try {
      const { runId, sessionId } = await t.submit('What is 17 multiplied by 23?');
      expect(await t.waitForTerminal(runId)).toBe('completed');
      const events = await t.events(runId);
      expect(events.filter((e) => e.type === 'model.request.started')).toHaveLength(2);
      const ofSession = reads.mock.calls.filter(([sid]) => sid === sessionId);
      // The first build folds what the claim read (the API's message and queued run, the claim's
      // own events); the second what the run wrote.
      expect(ofSession).toHaveLength(0);

      const kept = await t.platform.context.history(sessionId, LOCAL_PRINCIPAL);
      const fresh = await new ContextEngine(t.platform.store).history(sessionId, LOCAL_PRINCIPAL);
      expect(kept.lastSequence).toBe(fresh.lastSequence);
      // The log hands the calculator's output back in jsonb's key order, the run held it in its own.
      const completed = events.find((e) => e.type === 'tool.call.completed');
      expect(JSON.stringify(completed?.data)).toContain('"result":{"result":"391","expression":"17 * 23"}');
      expect(content(fresh.units)).toContain('"output":{"expression":"17 * 23","result":"391"}');
      expect(content(kept.units)).toBe(content(fresh.units));
      expect(JSON.stringify(kept.workingState())).toBe(JSON.stringify(fresh.workingState()));
    } finally {
      reads.mockRestore();
    }
  });

  it('reads nothing for the next turn of the session either: the claim brings what the API appended', async () => {
    // A second turn of the same session: its first build must see the new user message, which
    // the API appended after the first run's last write.
    const first = await t.submit('What is 17 multiplied by 23?');
    expect(await t.waitForTerminal(first.runId)).toBe('completed');
    const reads = jest.spyOn(t.platform.store, 'listAfter');
    try {
      const second = await t.submit(
        'What is 2 plus 2?',
        { modelPolicy: 'fake:calculator_then_answer' },
        first.sessionId,
      );
      expect(await t.waitForTerminal(second.runId)).toBe('completed');
      expect(reads.mock.calls.filter(([sid]) => sid === first.sessionId)).toHaveLength(0);
      const kept = await t.platform.context.history(first.sessionId, LOCAL_PRINCIPAL);
      const fresh = await new ContextEngine(t.platform.store).history(first.sessionId, LOCAL_PRINCIPAL);
      expect(kept.units.filter((u) => u.kind === 'user')).toHaveLength(2);
      expect(content(kept.units)).toBe(content(fresh.units));
    } finally {
      reads.mockRestore();
    }
  });

  it('reads the log when the claim’s tail does not reach the fold: another process ran the session before', async () => {
    const first = await t.submit('What is 17 multiplied by 23?');
    expect(await t.waitForTerminal(first.runId)).toBe('completed');
    // A second worker process: its engine holds no fold, and the session is longer than the tail.
    await worker.stop();
    const other = await createTestPlatform(tdb.url, { pollIntervalMs: 200 });
    const otherWorker = other.platform.createWorker({ concurrency: 1, pollIntervalMs: 200, drainMs: 5000 });
    await otherWorker.start();
    const reads = jest.spyOn(other.platform.store, 'listAfter');
    try {
      const second = await t.submit(
        'What is 2 plus 2?',
        { modelPolicy: 'fake:calculator_then_answer' },
        first.sessionId,
      );
      expect(await t.waitForTerminal(second.runId)).toBe('completed');
      expect(reads.mock.calls.filter(([sid]) => sid === first.sessionId)).toHaveLength(1);
      const kept = await other.platform.context.history(first.sessionId, LOCAL_PRINCIPAL);
      const fresh = await new ContextEngine(t.platform.store).history(first.sessionId, LOCAL_PRINCIPAL);
      expect(kept.units.filter((u) => u.kind === 'user')).toHaveLength(2);
      expect(content(kept.units)).toBe(content(fresh.units));
    } finally {
      reads.mockRestore();
      await otherWorker.stop();
      await other.close();
      worker = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 200, drainMs: 5000 });
      await worker.start();
    }
  });
});
