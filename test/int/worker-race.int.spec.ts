import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { LeaseFencedError } from '../../src/domain/errors';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { CreateSessionCommand } from '../../src/application/sessions/create-session';
import { SubmitMessageCommand } from '../../src/application/runs/submit-message';

let tdb: TestDb;
let t: TestPlatform;

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 5 });
});
afterAll(async () => {
  await t.close();
  await tdb.drop();
});

describe('workers racing over the queue', () => {
  it('executes each of 200 queued runs exactly once with two workers', async () => {
    const runIds: string[] = [];
    for (let i = 0; i < 200; i++) {
      const s = await t.commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
      runIds.push(
        (await t.commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, `What is ${i} plus 1?`))).runId,
      );
    }
    const a = t.platform.createWorker({ workerId: 'worker-a', concurrency: 4, pollIntervalMs: 100, drainMs: 5000 });
    const b = t.platform.createWorker({ workerId: 'worker-b', concurrency: 4, pollIntervalMs: 100, drainMs: 5000 });
    await Promise.all([a.start(), b.start()]);
    for (const id of runIds) expect(await t.waitForTerminal(id, 60_000)).toBe('completed');
    await Promise.all([a.stop(), b.stop()]);
    const counts = await t.platform.db.query<{ claimed: string; started: string; done: string }>(
      `SELECT count(*) FILTER (WHERE event_type = 'run.claimed') AS claimed,
              count(*) FILTER (WHERE event_type = 'tool.call.started') AS started,
              count(*) FILTER (WHERE event_type = 'run.completed') AS done
         FROM events WHERE run_id = ANY($1::uuid[]) GROUP BY run_id`,
      [runIds],
    );
    expect(counts.rows).toHaveLength(200);
    for (const r of counts.rows) expect(r).toEqual({ claimed: '1', started: '1', done: '1' });
    expect(a.stats.claimed + b.stats.claimed).toBe(200);
    expect(a.stats.claimed).toBeGreaterThan(0);
    expect(b.stats.claimed).toBeGreaterThan(0);
    // 200 runs on a loaded 2-core CI machine can take longer than jest's default minute.
  }, 180_000);

  it('claims in priority order, interactive before background', async () => {
    const background = await t.submit('What is 1 plus 1?', { priority: 200 });
    const interactive = await t.submit('What is 2 plus 2?', { priority: 10 });
    const first = await t.platform.queue.claim('w', 60_000);
    const second = await t.platform.queue.claim('w', 60_000);
    expect(first?.runId).toBe(interactive.runId);
    expect(second?.runId).toBe(background.runId);
    const loop = t.platform.createRunLoop();
    await loop.execute(first!, new AbortController().signal);
    await loop.execute(second!, new AbortController().signal);
  });

  it('releases a running run back to the queue when its worker shuts down before it finishes', async () => {
    const { runId } = await t.submit('go', { modelPolicy: 'fake:hanging_model' });
    const w = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 100, drainMs: 0, onlyRunId: runId });
    await w.start();
    for (let i = 0; i < 100 && (await t.platform.runs.get(runId, null))?.status !== 'running'; i++)
      await new Promise((r) => setTimeout(r, 50));
    await w.stop(0);
    const run = await t.platform.runs.get(runId, null);
    expect(run?.status).toBe('queued');
    expect(run?.leaseOwner).toBeNull();
    expect((await t.events(runId)).map((e) => e.type)).toContain('run.released');
    // Another worker picks it up at once (its lease need not expire); cancel it to finish.
    const again = await t.platform.queue.claim('w2', 60_000, runId);
    expect(again?.leaseEpoch).toBe(2);
  });

  it('refuses every write from a worker whose lease was taken over', async () => {
    const { runId } = await t.submit('What is 1 plus 1?');
    const first = await t.platform.queue.claim('old-worker', 60_000, runId);
    expect(first?.leaseEpoch).toBe(1);
    // The lease "expires" (the old worker stalled); a new worker takes over.
    await t.platform.db.query(`UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [runId]);
    const second = await t.platform.queue.claim('new-worker', 60_000, runId);
    expect(second?.leaseEpoch).toBe(2);
    // The stalled worker wakes up: its heartbeat reports it fenced and its writes are refused.
    expect((await t.platform.queue.heartbeat(first!, 60_000)).held).toBe(false);
    await expect(
      t.platform.journal.write(first!, [{ type: 'run.completed', runId, data: { messageId: randomUUID() } }]),
    ).rejects.toBeInstanceOf(LeaseFencedError);
    const loop = t.platform.createRunLoop();
    expect(await loop.execute(first!, new AbortController().signal)).toBe('fenced');
    // The new owner finishes the run.
    expect(await loop.execute(second!, new AbortController().signal)).toBe('finished');
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types.filter((x) => x === 'run.completed')).toHaveLength(1);
  });
});
