import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { LoopStopped } from '../../src/runtime/stop-reason';
import { CancelRunCommand } from '../../src/application/runs/cancel-run';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { ModelEvent } from '../../src/domain/model/model-events';
import { ConcurrencyConflict } from '../../src/domain/errors';

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

/**
 * Runs `fn` with the platform's model calls held: the first call's stream yields nothing until
 * `release()` resolves (the provider is otherwise the real fake one). Deterministic "in flight".
 */
async function withFirstModelCallHeld<T>(release: () => Promise<unknown>, fn: () => Promise<T>): Promise<T> {
  const router = t.platform.router;
  const resolve = router.resolve.bind(router);
  let calls = 0;
  const spy = jest.spyOn(router, 'resolve').mockImplementation((policy, needs) => {
    const route = resolve(policy, needs);
    const stream = route.provider.stream.bind(route.provider);
    return {
      ...route,
      provider: {
        ...route.provider,
        stream: async function* (request, model, attempt): AsyncGenerator<ModelEvent> {
          calls += 1;
          if (calls === 1) await release();
          yield* stream(request, model, attempt);
        },
      },
    };
  });
  try {
    return await fn();
  } finally {
    spy.mockRestore();
  }
}

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
    // One checkpoint per commit, the batch's last state (ADR 0057): the tool-calling response's
    // (version 1) commits with the tool result's, which supersedes it; the terminal write has none.
    // The versions are those the run always had, so `run.checkpointed` names one that exists.
    const cps = await t.platform.db.query<{ version: number; phase: string; step: number }>(
      `SELECT version, state->>'phase' AS phase, (state->>'step')::int AS step FROM checkpoints WHERE run_id = $1 ORDER BY version`,
      [runId],
    );
    expect(cps.rows).toEqual([{ version: 2, phase: 'tools_completed', step: 1 }]);
    const named = (await t.events(runId)).flatMap((e) => (e.type === 'run.checkpointed' ? [e.data] : []));
    expect(named).toEqual([{ checkpointVersion: 2, step: 1 }]);
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
    const appender = (t.platform.store as unknown as { appender: { cache: { entries: Map<string, unknown> } } })
      .appender;
    const cache = appender.cache.entries;
    const submitted = cache.get(sessionId);
    expect(submitted).toBeDefined();
    const claim = await t.platform.queue.claim('w-late-cache', 30_000, runId);
    cache.set(sessionId, submitted);
    expect(await t.platform.createRunLoop().execute(claim!, new AbortController().signal)).toBe('finished');
    expect((await t.platform.runs.get(runId, null))?.status).toBe('completed');
  });

  it("refuses the next model call's start when a cancel was requested while a tool ran: one model call, none marked not made", async () => {
    // workspace.write_text is not a pure computation: its start is committed before it runs.
    const { runId } = await t.submit('Write the notes.', { modelPolicy: 'fake:untrusted_tool_output' });
    const journal = t.platform.journal;
    const write = journal.write.bind(journal);
    let cancelled = false;
    // The real run journal; once the tool's start has committed (the tool runs next), a user's
    // cancel (the API's command) commits before the loop goes on.
    const spy = jest.spyOn(journal, 'write').mockImplementation(async (lease, events, options) => {
      const result = await write(lease, events, options);
      if (!cancelled && events.some((e) => e.type === 'tool.call.started')) {
        cancelled = true;
        await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'test'));
      }
      return result;
    });
    try {
      const claim = await t.platform.queue.claim('w-cancel-tool', 30_000, runId);
      expect(await t.platform.createRunLoop().execute(claim!, new AbortController().signal)).toBe('finished');
    } finally {
      spy.mockRestore();
    }
    expect(cancelled).toBe(true);
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'cancelled', modelCallCount: 1 });
    const types = (await t.events(runId)).map((e) => e.type);
    // The tool's result and the step's checkpoint are recorded (with the terminal write); the start
    // that would have ridden with them was refused, so no second call is recorded at all.
    expect(types.filter((x) => x === 'tool.call.completed')).toHaveLength(1);
    expect(types.slice(types.indexOf('run.cancel_requested'))).toEqual([
      'run.cancel_requested',
      'tool.call.completed',
      'run.checkpointed',
      'run.cancelled',
    ]);
    expect(types.filter((x) => x === 'model.request.started')).toHaveLength(1);
    expect(types).not.toContain('model.request.failed');
  });

  it('calls no model when a cancel was requested between the claim and the first model call', async () => {
    const { runId } = await t.submit('What is 17 multiplied by 23?');
    const claim = await t.platform.queue.claim('w-cancel-first', 30_000, runId);
    // The claim's rows (which the lease starts from) have no cancel; the user's cancel follows them.
    const r = await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'test'));
    expect(r.outcome).toBe('cancel_requested');
    expect(await t.platform.createRunLoop().execute(claim!, new AbortController().signal)).toBe('finished');
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'cancelled', modelCallCount: 0 });
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types.slice(types.indexOf('run.started'))).toEqual([
      'run.started',
      'run.consent_stamped',
      'run.cancel_requested',
      'run.cancelled',
    ]);
  });

  it('ends a run cancelled while its first model call is in flight, after a pure step, with that one model call', async () => {
    const { runId } = await t.submit('What is 17 multiplied by 23?');
    const claim = await t.platform.queue.claim('w-cancel-in-flight', 30_000, runId);
    // A user's cancel (the API's command) once the first call's start has committed; that call does
    // not answer before the cancel has committed. Its answer proposes the calculator (pure).
    let cancel: Promise<unknown> | null = null;
    const loop = t.platform.createRunLoop({}, (events) => {
      if (cancel === null && events.some((e) => e.type === 'model.request.started'))
        cancel = t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'test'));
    });
    const result = await withFirstModelCallHeld(
      () => cancel ?? Promise.reject(new Error('the model was called before its start committed')),
      () => loop.execute(claim!, new AbortController().signal),
    );
    expect(result).toBe('finished');
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'cancelled', modelCallCount: 1 });
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types.filter((x) => x === 'model.request.started')).toHaveLength(1);
    expect(types.filter((x) => x === 'model.request.failed')).toHaveLength(0);
    // The step still ran (the calculator) and was checkpointed before the run ended.
    expect(types.filter((x) => x === 'tool.call.completed')).toHaveLength(1);
    expect(types).toContain('run.checkpointed');
    expect(types.slice(types.indexOf('run.cancel_requested'))).not.toContain('model.request.started');
    expect(types.at(-1)).toBe('run.cancelled');
  });

  /**
   * Runs `fn` counting the executions of workspace.write_text by path (the real tool still runs).
   */
  async function countingWrites<T>(fn: (written: string[]) => Promise<T>): Promise<T> {
    const tool = t.platform.registry.get('workspace.write_text')!;
    const execute = tool.execute.bind(tool);
    const written: string[] = [];
    const spy = jest.spyOn(tool, 'execute').mockImplementation((args, ctx) => {
      written.push(String(args.path));
      return execute(args, ctx);
    });
    try {
      return await fn(written);
    } finally {
      spy.mockRestore();
    }
  }

  /** The run's tool invocations (the read model), in proposal order. */
  async function invocations(runId: string): Promise<{ path: string; status: string }[]> {
    const r = await t.platform.db.query<{ path: string; status: string }>(
      `SELECT arguments->>'path' AS path, status FROM tool_invocations WHERE run_id = $1 ORDER BY 1`,
      [runId],
    );
    return r.rows;
  }

  it('starts no tool with an effect that a model call proposed while a cancel committed during its stream', async () => {
    // The first call's answer proposes workspace.write_text (a workspace write: not pure).
    const { runId } = await t.submit('Write the notes.', { modelPolicy: 'fake:untrusted_tool_output' });
    const claim = await t.platform.queue.claim('w-cancel-before-tool', 30_000, runId);
    let cancel: Promise<unknown> | null = null;
    const loop = t.platform.createRunLoop({}, (events) => {
      if (cancel === null && events.some((e) => e.type === 'model.request.started'))
        cancel = t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'test'));
    });
    const written = await countingWrites(async (paths) => {
      const result = await withFirstModelCallHeld(
        () => cancel ?? Promise.reject(new Error('the model was called before its start committed')),
        () => loop.execute(claim!, new AbortController().signal),
      );
      expect(result).toBe('finished');
      return paths;
    });
    expect(written).toEqual([]);
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'cancelled', modelCallCount: 1 });
    const events = await t.events(runId);
    const types = events.map((e) => e.type);
    expect(types).not.toContain('tool.call.started');
    // The response is recorded as answered; the call it proposed is recorded as refused, not run.
    expect(types.slice(types.indexOf('run.cancel_requested'))).toEqual([
      'run.cancel_requested',
      'model.response.completed',
      'tool.call.proposed',
      'tool.call.authorized',
      'tool.call.denied',
      'run.cancelled',
    ]);
    expect(events.find((e) => e.type === 'tool.call.denied')?.data).toMatchObject({ reasonCode: 'run_cancelled' });
    expect(await invocations(runId)).toEqual([{ path: 'notes.md', status: 'denied' }]);
  });

  it.each([
    // Seen in the run row the first tool's result write returns: the second start is never sent.
    ['while the first tool runs', 'tool.call.started', 0],
    // Seen only by the second start's condition on the session sequence, which refuses it.
    ["after the first tool's result is written", 'tool.call.completed', 1],
  ])('starts no further tool with an effect of the step when a cancel commits %s', async (_when, after, refusals) => {
    const { runId } = await t.submit('Write two files.', { modelPolicy: 'fake:two_workspace_writes' });
    const journal = t.platform.journal;
    const write = journal.write.bind(journal);
    let cancelled = false;
    let refused = 0;
    // The real run journal; a user's cancel (the API's command) commits once the first write's
    // `after` event has committed, before the loop goes on.
    const spy = jest.spyOn(journal, 'write').mockImplementation(async (lease, events, options) => {
      const result = await write(lease, events, options).catch((e: unknown) => {
        if (e instanceof ConcurrencyConflict) refused += 1;
        throw e;
      });
      if (!cancelled && events.some((e) => e.type === after)) {
        cancelled = true;
        await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'test'));
      }
      return result;
    });
    const written = await countingWrites(async (paths) => {
      try {
        const claim = await t.platform.queue.claim('w-cancel-between-tools', 30_000, runId);
        expect(await t.platform.createRunLoop().execute(claim!, new AbortController().signal)).toBe('finished');
      } finally {
        spy.mockRestore();
      }
      return paths;
    });
    expect(cancelled).toBe(true);
    expect(refused).toBe(refusals);
    expect(written).toEqual(['first.md']);
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'cancelled', modelCallCount: 1 });
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types.filter((x) => x === 'tool.call.started')).toHaveLength(1);
    expect(types.filter((x) => x === 'model.request.started')).toHaveLength(1);
    expect(
      types.slice(types.lastIndexOf('tool.call.completed') + 1).filter((x) => x !== 'run.cancel_requested'),
    ).toEqual(['tool.call.proposed', 'tool.call.authorized', 'tool.call.denied', 'run.cancelled']);
    expect(await invocations(runId)).toEqual([
      { path: 'first.md', status: 'succeeded' },
      { path: 'second.md', status: 'denied' },
    ]);
  });

  it('ends a run cancelled, not released, when its worker shuts down before the loop saw the cancel', async () => {
    // The eval harness's case: a parent's cancel requests its running child's, and the case's worker
    // stops at once. The loop's own abort says "shutdown"; the log says a cancel was requested. A
    // release would leave the run queued, with its cancel pending, until some worker claimed it.
    const { runId } = await t.submit('go', { modelPolicy: 'fake:hanging_model' });
    const claim = await t.platform.queue.claim('w-shutdown-cancel', 30_000, runId);
    const stop = new AbortController();
    const running = t.platform.createRunLoop().execute(claim!, stop.signal);
    for (let i = 0; i < 200; i++) {
      if ((await t.events(runId)).some((e) => e.type === 'model.request.started')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // No worker runs here, so nothing pokes the loop's heartbeat (every 10 s) about the cancel.
    expect((await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'test'))).outcome).toBe(
      'cancel_requested',
    );
    stop.abort(new LoopStopped('shutdown'));
    expect(await running).toBe('finished');
    const run = await t.platform.runs.get(runId, null);
    expect(run).toMatchObject({ status: 'cancelled', leaseOwner: null });
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types).not.toContain('run.released');
    // The call the shutdown aborted is recorded as failed, as at any stop, then the run ends.
    expect(types.slice(types.indexOf('run.cancel_requested'))).toEqual([
      'run.cancel_requested',
      'model.request.failed',
      'run.cancelled',
    ]);
  });

  it('does not retry a started tool with an effect after a crash when the run was cancelled meanwhile', async () => {
    const { runId } = await t.submit('Write the notes.', { modelPolicy: 'fake:untrusted_tool_output' });
    const first = await t.platform.queue.claim('w-crash-tool', 30_000, runId);
    // The first lease stops (abandons, as a crash would) once the tool's start is durable.
    const stop = new AbortController();
    const crashing = t.platform.createRunLoop({}, (events) => {
      if (events.some((e) => e.type === 'tool.call.started')) stop.abort(new LoopStopped('abandon'));
    });
    const written = await countingWrites(async (paths) => {
      expect(await crashing.execute(first!, stop.signal)).toBe('abandoned');
      expect(await invocations(runId)).toEqual([{ path: 'notes.md', status: 'running' }]);
      expect((await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'test'))).outcome).toBe(
        'cancel_requested',
      );
      await t.platform.db.query(`UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [
        runId,
      ]);
      const second = await t.platform.queue.claim('w-after-crash', 30_000, runId);
      expect(await t.platform.createRunLoop().execute(second!, new AbortController().signal)).toBe('finished');
      return paths;
    });
    // The interrupted call is not run again; it is recorded as failed (it may have taken effect).
    expect(written).toEqual([]);
    expect(await t.platform.runs.get(runId, null)).toMatchObject({ status: 'cancelled', modelCallCount: 1 });
    const events = await t.events(runId);
    const types = events.map((e) => e.type);
    expect(types.filter((x) => x === 'tool.call.started')).toHaveLength(1);
    expect(types.slice(types.lastIndexOf('run.started') + 1)).toEqual(['tool.call.failed', 'run.cancelled']);
    expect(events.find((e) => e.type === 'tool.call.failed')?.data).toMatchObject({
      errorCode: 'run_cancelled',
      retryable: false,
    });
    expect(await invocations(runId)).toEqual([{ path: 'notes.md', status: 'failed' }]);
  });
});
