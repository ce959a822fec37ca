import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { NewEvent } from '../../../src/domain/events/payloads';
import type { IdempotencyClass, ToolSpec } from '../../../src/domain/tools/tool-spec';
import { ToolPipeline, type ToolCallContext } from '../../../src/runtime/tool-pipeline';
import { LoopStopped } from '../../../src/runtime/stop-reason';

/**
 * A stop (crash, shutdown, fencing) that arrives while `tool.call.started` or the effect watermark
 * is being written must still keep the tool from running. The `abort` event has fired by the time
 * the tool would start, so only an explicit check catches it; without one the tool ran to its end
 * and its result was recorded after the worker had been told to abandon the run (eval case 18 under
 * load). These tests stop the run exactly at each of those writes.
 */
let tdb: TestDb;
let t: TestPlatform;
const executions = new Map<string, number>();

function countedTool(name: string, idempotency: IdempotencyClass): ToolSpec {
  return {
    name,
    version: '1.0.0',
    description: 'Counts its executions (test tool).',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    outputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    sideEffect: 'workspace_write',
    risk: 'low',
    idempotency,
    requiredScopes: ['tools.use'],
    timeoutSeconds: 5,
    maximumOutputBytes: 1024,
    allowParallel: false,
  };
}

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url);
  for (const [name, idempotency] of [
    ['test.unsafe_write', 'non_idempotent'],
    ['test.safe_write', 'idempotent'],
  ] as const) {
    executions.set(name, 0);
    t.platform.registry.register({
      spec: countedTool(name, idempotency),
      async execute() {
        const n = (executions.get(name) ?? 0) + 1;
        executions.set(name, n);
        return { ok: true, output: { n } };
      },
    });
  }
});
afterAll(async () => {
  await t?.close();
  await tdb?.drop();
});

async function processStoppingAt(toolName: string, stopAt: NewEvent['type'] | null) {
  const { runId, sessionId } = await t.submit('test');
  const run = await t.platform.runs.get(runId, null);
  const agent = await t.platform.agents.get(run!.agentId, run!.agentVersion);
  const controller = new AbortController();
  const ctx: ToolCallContext = {
    runId,
    sessionId,
    step: 1,
    agent: { ...agent!, enabledTools: [...agent!.enabledTools, toolName] },
    principal: LOCAL_PRINCIPAL,
    signal: controller.signal,
  };
  const p = t.platform;
  const pipeline = new ToolPipeline({
    registry: p.registry,
    runs: p.runs,
    records: p.toolRecords,
    policy: p.policy,
    clock: p.clock,
    ids: p.ids,
  });
  const outcome = await pipeline.process(
    { kind: 'tool_call', callId: 'call-1', name: toolName, arguments: {} },
    ctx,
    async (events) => {
      await p.store.append(sessionId, events, { tenantId: LOCAL_PRINCIPAL.tenantId });
      // The worker is told to stop as soon as this write has committed, before the tool starts.
      if (events.some((e) => e.type === stopAt)) controller.abort(new LoopStopped('abandon'));
    },
  );
  return { outcome, types: (await t.events(runId)).map((e) => e.type) };
}

describe('a stop that arrives while the tool is being started', () => {
  it('after the effect watermark of a non-idempotent tool: the tool never runs and nothing more is written', async () => {
    const { outcome, types } = await processStoppingAt('test.unsafe_write', 'tool.call.effect_started');
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(executions.get('test.unsafe_write')).toBe(0);
    expect(types.slice(-2)).toEqual(['tool.call.started', 'tool.call.effect_started']);
  });

  it('after tool.call.started of a safe tool: the tool never runs (recovery retries it)', async () => {
    const { outcome, types } = await processStoppingAt('test.safe_write', 'tool.call.started');
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(executions.get('test.safe_write')).toBe(0);
    expect(types[types.length - 1]).toBe('tool.call.started');
  });

  it('without a stop, the same call runs once and its result is recorded (the harness itself works)', async () => {
    const before = executions.get('test.unsafe_write') ?? 0;
    const { outcome, types } = await processStoppingAt('test.unsafe_write', null);
    expect(outcome).toEqual({ kind: 'done' });
    expect(executions.get('test.unsafe_write')).toBe(before + 1);
    expect(types.slice(-3)).toEqual(['tool.call.started', 'tool.call.effect_started', 'tool.call.completed']);
  });
});
