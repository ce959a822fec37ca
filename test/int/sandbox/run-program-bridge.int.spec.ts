import type { StoredEvent } from '../../../src/domain/events/payloads';
import { call, readSse, type ApiHarness } from '../api/api-harness';
import { SANDBOX_RUNNABLE, startSandboxedApi, type SandboxedApi } from './sandboxed-api';

/**
 * sandbox.run_program end to end through the API (issue 28, plan §8.5): the demo model calls the
 * tool once; the program in the bubblewrap sandbox calls math.calculate through the bridge N times;
 * each bridged call goes through the run's tool pipeline and is recorded as `tool.call.*` with
 * `via: bridge` under the program's invocation — and the run makes one tool round trip of the model.
 */
const d = SANDBOX_RUNNABLE ? describe : describe.skip;

let sandboxed: SandboxedApi;
let h: ApiHarness;

beforeAll(async () => {
  if (!SANDBOX_RUNNABLE) return;
  sandboxed = await startSandboxedApi('sbx-prog-');
  h = sandboxed.h;
}, 120_000);
afterAll(async () => {
  await sandboxed?.close();
});

const of = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
  events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);

async function runProgram(code: string): Promise<{ runId: string; events: StoredEvent[] }> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
  expect(s.status).toBe(201);
  const text = `call sandbox.run_program with ${JSON.stringify({ language: 'python', code })}`;
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text }] },
  });
  expect(m.status).toBe(202);
  const frames = await readSse(`${h.base}/v1/runs/${m.body.run_id}/events`);
  expect(frames.filter((f) => f.id !== undefined).pop()?.event).toBe('run.completed');
  return { runId: m.body.run_id, events: await h.t.events(m.body.run_id) };
}

d('sandbox.run_program through the API', () => {
  it('a program calling math.calculate N times: N recorded bridged calls, one model tool round trip', async () => {
    const n = 5;
    const code = [
      'from agent_tools import call',
      'total = 0',
      `for i in range(1, ${n + 1}):`,
      '    total += float(call("math.calculate", {"expression": f"{i} * {i}"})["result"])',
      'print(total)',
    ].join('\n');
    const { runId, events } = await runProgram(code);
    const proposed = of(events, 'tool.call.proposed');
    const parent = proposed.find((e) => e.data.toolName === 'sandbox.run_program')!;
    const bridged = proposed.filter((e) => e.data.via === 'bridge');
    expect(bridged).toHaveLength(n);
    for (const [i, e] of bridged.entries()) {
      expect(e.data).toMatchObject({
        toolName: 'math.calculate',
        parentInvocationId: parent.data.invocationId,
        callId: `${parent.data.callId}:bridge:${i + 1}`,
        arguments: { expression: `${i + 1} * ${i + 1}` },
      });
    }
    const ids = new Set(bridged.map((e) => e.data.invocationId));
    expect(of(events, 'tool.call.authorized').filter((e) => ids.has(e.data.invocationId))).toHaveLength(n);
    const completed = of(events, 'tool.call.completed').filter((e) => ids.has(e.data.invocationId));
    expect(completed.map((e) => e.data.result.result)).toEqual(['1', '4', '9', '16', '25']);
    const programResult = of(events, 'tool.call.completed').find(
      (e) => e.data.invocationId === parent.data.invocationId,
    )!.data.result as { data: { stdout: string; bridge_calls: unknown[] } };
    expect(programResult.data.stdout.trim()).toBe('55.0');
    expect(programResult.data.bridge_calls).toHaveLength(n);
    // One tool round trip: the model asked for the program once, then answered.
    expect(of(events, 'model.response.completed')).toHaveLength(2);
    const run = await call(h.base, 'GET', `/v1/runs/${runId}`);
    expect(run.body).toMatchObject({ status: 'completed', model_call_count: 2 });
  }, 120_000);

  it('a bridged call with bad arguments is recorded as failed and the program sees the error', async () => {
    const code = [
      'from agent_tools import call, ToolError',
      'try:',
      '    call("math.calculate", {"expression": 7})',
      'except ToolError as e:',
      '    print("refused:", e.code)',
    ].join('\n');
    const { events } = await runProgram(code);
    const bridged = of(events, 'tool.call.proposed').filter((e) => e.data.via === 'bridge');
    expect(bridged).toHaveLength(1);
    const failed = of(events, 'tool.call.failed').filter((e) => e.data.invocationId === bridged[0].data.invocationId);
    expect(failed.map((e) => e.data.errorCode)).toEqual(['tool_validation_error']);
    const out = of(events, 'tool.call.completed').find((e) => e.data.result && 'data' in e.data.result)!.data
      .result as { data: { stdout: string } };
    expect(out.data.stdout).toContain('refused: tool_validation_error');
  }, 120_000);
});
