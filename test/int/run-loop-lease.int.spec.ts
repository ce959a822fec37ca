import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { LoopStopped } from '../../src/runtime/stop-reason';

let tdb: TestDb;
let t: TestPlatform;

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 30 });
});
afterAll(async () => {
  await t.close();
  await tdb.drop();
});

/** The run's events grouped by the transaction that committed them, in log order. */
async function commits(runId: string): Promise<string[][]> {
  const r = await t.platform.db.query<{ types: string[] }>(
    `SELECT array_agg(event_type ORDER BY sequence) AS types FROM events WHERE run_id = $1
      GROUP BY transaction_id ORDER BY min(sequence)`,
    [runId],
  );
  return r.rows.map((x) => x.types);
}

describe('the run loop within one lease (docs/adr/0013-run-loop-round-trips.md)', () => {
  it('commits the calculator turn in four worker transactions, with the plan §26 events in order', async () => {
    const { runId } = await t.submit('What is 17 multiplied by 23?');
    const claim = await t.platform.queue.claim('w-commits', 30_000, runId);
    expect(await t.platform.createRunLoop().execute(claim!, new AbortController().signal)).toBe('finished');
    expect(await commits(runId)).toEqual([
      ['user.message.created', 'run.queued'],
      ['run.claimed', 'run.started', 'run.consent_stamped'], // the consent stamp rides with the first claim (ADR 0016)
      ['model.request.started'],
      // The calculator is a pure computation: nothing is committed before it runs; the response
      // proposing it (with its checkpoint), its start and its result are written with the step's
      // checkpoint and the next model call's start (ADR 0013, sessions 7 and 8).
      [
        'model.response.completed',
        'tool.call.proposed',
        'tool.call.authorized',
        'tool.call.started',
        'tool.call.completed',
        'run.checkpointed',
        'model.request.started',
      ],
      ['model.response.completed', 'assistant.message.completed', 'run.completed'],
    ]);
    // Every persistence point still has its checkpoint: after the tool-calling response, after the
    // tool result, and the terminal one (which the final response now shares).
    const cps = await t.platform.db.query<{ version: number; phase: string; step: number }>(
      `SELECT version, state->>'phase' AS phase, (state->>'step')::int AS step FROM checkpoints WHERE run_id = $1 ORDER BY version`,
      [runId],
    );
    expect(cps.rows).toEqual([
      { version: 1, phase: 'model_completed', step: 1 },
      { version: 2, phase: 'tools_completed', step: 1 },
      { version: 3, phase: 'terminal', step: 2 },
    ]);
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'completed', finalText: 'The result is 391.', modelCallCount: 2 });
    expect(run?.usage.toolCalls).toBe(1);
  });

  it('refuses the writes of a worker whose cached run row predates a take-over', async () => {
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'fake:slow_calculator' });
    const first = await t.platform.queue.claim('w-old', 30_000, runId);
    const loop = t.platform.createRunLoop();
    const stale = loop.execute(first!, new AbortController().signal);
    // Wait until the old worker is inside its first model call, holding its run row in memory.
    for (let i = 0; i < 200; i++) {
      if ((await t.events(runId)).some((e) => e.type === 'model.request.started')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await t.platform.db.query(`UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [runId]);
    const second = await t.platform.queue.claim('w-new', 30_000, runId);
    expect(second?.leaseEpoch).toBe(first!.leaseEpoch + 1);
    // Its model response (and everything after it) is refused at write time.
    expect(await stale).toBe('fenced');
    const afterTakeover = (await t.events(runId)).map((e) => e.type);
    expect(afterTakeover.slice(afterTakeover.lastIndexOf('run.claimed'))).toEqual(['run.claimed', 'run.started']);
    expect(await loop.execute(second!, new AbortController().signal)).toBe('finished');
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types.filter((x) => x === 'run.completed')).toHaveLength(1);
    expect(types.filter((x) => x === 'tool.call.completed')).toHaveLength(1);
  });

  it('skips the invocation read only while no tool call can exist: a lease after a started call finds it', async () => {
    const { runId } = await t.submit('What is 17 multiplied by 23?');
    const first = await t.platform.queue.claim('w-first', 30_000, runId);
    expect(first?.preloaded?.hasToolInvocations).toBe(false);
    // The first lease stops (abandons, as a crash would) once tool.call.started is durable.
    const stop = new AbortController();
    const crashing = t.platform.createRunLoop({}, (events) => {
      if (events.some((e) => e.type === 'tool.call.started')) stop.abort(new LoopStopped('abandon'));
    });
    expect(await crashing.execute(first!, stop.signal)).toBe('abandoned');
    await t.platform.db.query(`UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [runId]);
    const second = await t.platform.queue.claim('w-second', 30_000, runId);
    expect(second?.preloaded?.hasToolInvocations).toBe(true);
    expect(await t.platform.createRunLoop().execute(second!, new AbortController().signal)).toBe('finished');
    const types = (await t.events(runId)).map((e) => e.type);
    // The call the first lease proposed was found (not proposed again, not counted twice).
    expect(types.filter((x) => x === 'tool.call.proposed')).toHaveLength(1);
    expect(types.filter((x) => x === 'tool.call.completed')).toHaveLength(1);
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'completed', finalText: 'The result is 391.' });
    expect(run?.usage.toolCalls).toBe(1);
  });

  it('is not fenced by rows older than its claim that the event store cached late', async () => {
    const { runId, sessionId } = await t.submit('What is 17 multiplied by 23?');
    // The interleaving seen with API and worker in one process (the bench, `agent start`): the
    // submit's append commits, its NOTIFY wakes the worker, the claim commits and caches its rows,
    // and only then does the submit record its own (older) rows in the store's session cache.
    const cache = (t.platform.store as unknown as { cache: { entries: Map<string, unknown> } }).cache.entries;
    const submitted = cache.get(sessionId);
    expect(submitted).toBeDefined();
    const claim = await t.platform.queue.claim('w-late-cache', 30_000, runId);
    cache.set(sessionId, submitted);
    expect(await t.platform.createRunLoop().execute(claim!, new AbortController().signal)).toBe('finished');
    expect((await t.platform.runs.get(runId, null))?.status).toBe('completed');
  });

  it('sees a cancel request made while a tool runs in the write that carries the step checkpoint, and calls no model', async () => {
    const { runId, sessionId } = await t.submit('What is 17 multiplied by 23?');
    const store = t.platform.store;
    const append = store.append.bind(store);
    let cancelled = false;
    // The real store; once the first model call's start has committed (the last write before the
    // calculator, a pure computation, runs), a user's cancel lands before the tool's result is
    // written (as CancelRun appends it for a running run).
    const spy = jest.spyOn(store, 'append').mockImplementation(async (sid, events, options) => {
      const result = await append(sid, events, options);
      if (!cancelled && events.some((e) => e.type === 'model.request.started')) {
        cancelled = true;
        await append(
          sessionId,
          [{ type: 'run.cancel_requested', runId, actorType: 'user', data: { reason: 'test' } }],
          { tenantId: 'local' },
        );
      }
      return result;
    });
    try {
      const claim = await t.platform.queue.claim('w-cancel-tool', 30_000, runId);
      expect(await t.platform.createRunLoop().execute(claim!, new AbortController().signal)).toBe('finished');
    } finally {
      spy.mockRestore();
    }
    expect((await t.platform.runs.get(runId, null))?.status).toBe('cancelled');
    const events = await t.events(runId);
    const types = events.map((e) => e.type);
    // The tool's result and the step's checkpoint are recorded; the second model call is recorded
    // as not made, and no response follows it.
    expect(types.filter((x) => x === 'tool.call.completed')).toHaveLength(1);
    expect(types).toContain('run.checkpointed');
    expect(types.filter((x) => x === 'model.request.started')).toHaveLength(2);
    expect(types.filter((x) => x === 'model.response.completed')).toHaveLength(1);
    const failed = events.find((e) => e.type === 'model.request.failed');
    expect(failed?.type === 'model.request.failed' && failed.data.errorCode).toBe('aborted');
    expect(types.at(-1)).toBe('run.cancelled');
  });

  it('sees a cancel request that arrives while a tool step runs, through its own next append', async () => {
    const { runId, sessionId } = await t.submit('What is 17 multiplied by 23?', {
      modelPolicy: 'fake:slow_calculator',
    });
    const claim = await t.platform.queue.claim('w-cancel', 30_000, runId);
    const done = t.platform.createRunLoop().execute(claim!, new AbortController().signal);
    for (let i = 0; i < 200; i++) {
      if ((await t.events(runId)).some((e) => e.type === 'model.request.started')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // A foreign append (as CancelRun makes for a running run) while the loop holds its cached row.
    await t.platform.store.append(
      sessionId,
      [{ type: 'run.cancel_requested', runId, actorType: 'user', data: { reason: 'test' } }],
      { tenantId: 'local' },
    );
    expect(await done).toBe('finished');
    const run = await t.platform.runs.get(runId, null);
    expect(run?.status).toBe('cancelled');
    const types = (await t.events(runId)).map((e) => e.type);
    // The tool step finished and was checkpointed; the next model call was never made: the pure
    // step's one write (response, calculator, checkpoint, next start) saw the cancel, so that start
    // is recorded as not made, and no second response follows.
    expect(types.filter((x) => x === 'tool.call.completed')).toHaveLength(1);
    expect(types).toContain('run.checkpointed');
    expect(types.filter((x) => x === 'model.response.completed')).toHaveLength(1);
    const failed = (await t.events(runId)).find((e) => e.type === 'model.request.failed');
    expect(failed?.type === 'model.request.failed' && failed.data.message).toMatch(/not made/);
    expect(types.at(-1)).toBe('run.cancelled');
  });
});
