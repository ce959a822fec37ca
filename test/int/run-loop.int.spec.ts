import { createTestDb, type TestDb } from '../support/test-db';
import { createTestPlatform, isSubsequence, type TestPlatform } from '../support/platform';
import type { Worker } from '../../src/runtime/worker';
import { CancelRunCommand } from '../../src/application/runs/cancel-run';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';

const PLAN_26_TRACE = [
  'run.queued',
  'run.started',
  'model.request.started',
  'model.response.completed',
  'tool.call.proposed',
  'tool.call.authorized',
  'tool.call.started',
  'tool.call.completed',
  'run.checkpointed',
  'model.request.started',
  'model.response.completed',
  'assistant.message.completed',
  'run.completed',
];
const TERMINAL = ['run.completed', 'run.failed', 'run.cancelled'];

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 3, pollIntervalMs: 200 });
  worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 5000 });
  await worker.start();
});
afterAll(async () => {
  await worker.stop();
  await t.close();
  await tdb.drop();
});

describe('the run loop', () => {
  it('answers a calculator question with the event trace of plan §26 and exactly one terminal event', async () => {
    const { runId } = await t.submit('What is 17 multiplied by 23?');
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const types = (await t.events(runId)).map((e) => e.type);
    expect(isSubsequence(PLAN_26_TRACE, types)).toBe(true);
    expect(types.filter((x) => TERMINAL.includes(x))).toEqual(['run.completed']);
    const run = await t.platform.runs.get(runId, null);
    expect(run?.finalText).toBe('The result is 391.');
    expect(run?.toolCallCount).toBe(1);
    expect(run?.modelCallCount).toBe(2);
    expect(run?.usage.outputTokens).toBeGreaterThan(0);
  });

  it('never lets invalid tool arguments reach the tool implementation', async () => {
    const { runId } = await t.submit('go', { modelPolicy: 'fake:invalid_tool_arguments' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const events = await t.events(runId);
    expect(events.some((e) => e.type === 'tool.call.started')).toBe(false);
    const failed = events.find((e) => e.type === 'tool.call.failed');
    expect(failed?.type === 'tool.call.failed' && failed.data.errorCode).toBe('tool_validation_error');
  });

  it.each([
    ['max steps', 'fake:step_limit', { maxSteps: 3 }, 'max_steps_exceeded'],
    ['max model calls', 'fake:step_limit', { maxModelCalls: 2 }, 'max_model_calls_exceeded'],
    ['the deadline', 'fake:hanging_model', { deadlineSeconds: 1 }, 'deadline_exceeded'],
    ['a permanent model failure', 'fake:permanent_failure', {}, 'model_permanent_error'],
    ['a repeated identical call', 'fake:repeated_tool_loop', {}, 'loop_detected'],
  ])('stops a run at %s with the right failure reason', async (_label, modelPolicy, limits, reason) => {
    const { runId } = await t.submit('go', { modelPolicy, limits });
    expect(await t.waitForTerminal(runId)).toBe('failed');
    const run = await t.platform.runs.get(runId, null);
    // A hanging model that hits the deadline surfaces either as the deadline gate or as the exhausted transient retries.
    if (reason === 'deadline_exceeded')
      expect(['deadline_exceeded', 'model_transient_exhausted']).toContain(run?.failure?.reason);
    else expect(run?.failure?.reason).toBe(reason);
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types.filter((x) => TERMINAL.includes(x))).toEqual(['run.failed']);
  });

  it('counts each model call once against max_model_calls', async () => {
    const { runId } = await t.submit('go', {
      modelPolicy: 'fake:step_limit',
      limits: { maxSteps: 5, maxModelCalls: 7, maxToolCalls: 20 },
    });
    expect(await t.waitForTerminal(runId)).toBe('failed');
    const run = await t.platform.runs.get(runId, null);
    expect(run?.failure?.reason).toBe('max_steps_exceeded');
    expect(run?.modelCallCount).toBe(5);
  });

  it('retries a transient model failure and completes', async () => {
    const { runId } = await t.submit('go', { modelPolicy: 'fake:transient_then_answer' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const types = (await t.events(runId)).map((e) => e.type);
    expect(types).toContain('model.request.failed');
  });

  it('cancels a queued run directly and a running run cooperatively', async () => {
    await worker.stop();
    const queued = await t.submit('What is 2 plus 2?');
    const r1 = await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, queued.runId));
    expect(r1.outcome).toBe('cancelled');
    worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 5000 });
    await worker.start();
    const running = await t.submit('go', { modelPolicy: 'fake:hanging_model' });
    for (let i = 0; i < 100 && (await t.platform.runs.get(running.runId, null))?.status !== 'running'; i++)
      await new Promise((r) => setTimeout(r, 50));
    const r2 = await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, running.runId));
    expect(r2.outcome).toBe('cancel_requested');
    expect(await t.waitForTerminal(running.runId)).toBe('cancelled');
  });

  it('resumes a crashed run without its checkpoints and reaches the same outcome, executing the tool once', async () => {
    await worker.stop();
    const { runId } = await t.submit('What is 17 multiplied by 23?', { modelPolicy: 'fake:slow_calculator' });
    const first = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 100, drainMs: 0, onlyRunId: runId });
    await first.start();
    for (let i = 0; i < 200; i++) {
      if ((await t.events(runId)).some((e) => e.type === 'tool.call.completed')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await first.crash();
    await t.platform.db.query('DELETE FROM checkpoints WHERE run_id = $1', [runId]);
    worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 5000 });
    await worker.start();
    expect(await t.waitForTerminal(runId, 30_000)).toBe('completed');
    const events = await t.events(runId);
    expect(events.filter((e) => e.type === 'tool.call.started')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'assistant.message.completed')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'run.claimed').length).toBeGreaterThanOrEqual(2);
    expect((await t.platform.runs.get(runId, null))?.finalText).toBe('The result is 391.');
  });

  it('keeps checkpoint size constant as a run grows', async () => {
    const { runId } = await t.submit('go', {
      modelPolicy: 'fake:step_limit',
      limits: { maxSteps: 12, maxModelCalls: 20, maxToolCalls: 20 },
    });
    await t.waitForTerminal(runId);
    const sizes = (
      await t.platform.db.query<{ version: number; size: number; phase: string }>(
        `SELECT version, octet_length(state::text) AS size, state->>'phase' AS phase FROM checkpoints WHERE run_id = $1 AND state->>'phase' = 'tools_completed' ORDER BY version`,
        [runId],
      )
    ).rows;
    expect(sizes.length).toBeGreaterThanOrEqual(10);
    const first = sizes[1].size;
    const last = sizes[sizes.length - 1].size;
    expect(last).toBeLessThanOrEqual(first * 1.5);
  });
});
