import * as fs from 'node:fs';
import * as path from 'node:path';
import { projectRoot } from '../../../src/config/project-root';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { call, type ApiHarness } from '../api/api-harness';
import { SANDBOX_RUNNABLE, startSandboxedApi, type SandboxedApi } from './sandboxed-api';

/**
 * A bridged call that needs a human's approval (issue 28, plan §8.5): the program is stopped, the
 * run waits on the approval exactly as for a model's call, and after the decision the program runs
 * again from the start, its earlier bridged calls answered from their records — nothing runs twice.
 */
const d = SANDBOX_RUNNABLE ? describe : describe.skip;

const BRIDGER = `
id: bridger
version: 1
name: Bridger
instructions: Run programs when asked.
model_policy: demo
enabled_tools: [math.calculate, demo.external_write, sandbox.run_program]
bridge_tools: [demo.external_write]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 300 }
`;

let sandboxed: SandboxedApi;
let h: ApiHarness;

beforeAll(async () => {
  if (!SANDBOX_RUNNABLE) return;
  sandboxed = await startSandboxedApi('sbx-approval-', (dir) => {
    const configDir = path.join(dir, 'config');
    fs.cpSync(path.join(projectRoot(), 'config'), configDir, { recursive: true });
    fs.writeFileSync(path.join(configDir, 'agents', 'bridger.yaml'), BRIDGER);
    return { configDir, defaultAgentId: 'bridger' };
  });
  h = sandboxed.h;
}, 120_000);
afterAll(async () => {
  await sandboxed?.close();
});

const of = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
  events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);

const PROGRAM = [
  'from agent_tools import call, ToolError',
  'answer = call("math.calculate", {"expression": "6 * 7"})["result"]',
  'try:',
  '    sent = call("demo.external_write", {"text": f"the answer is {answer}", "target": "the newsletter"})',
  '    print("sent", sent["record_id"])',
  'except ToolError as e:',
  '    print("not sent:", e.code)',
].join('\n');

async function untilStatus(runId: string, status: string): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    const run = await call(h.base, 'GET', `/v1/runs/${runId}`);
    if (run.body.status === status) return;
    if (Date.now() > end) throw new Error(`run ${runId} is ${run.body.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function submitProgram(): Promise<{ runId: string; approvalId: string; events: StoredEvent[] }> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
  const text = `call sandbox.run_program with ${JSON.stringify({ language: 'python', code: PROGRAM })}`;
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text }] },
  });
  expect(m.status).toBe(202);
  const runId = m.body.run_id;
  await untilStatus(runId, 'waiting_for_approval');
  const pending = await call(h.base, 'GET', '/v1/approvals?status=pending');
  const approval = (pending.body.items as { id: string; run_id: string; tool_name: string }[]).find(
    (a) => a.run_id === runId,
  )!;
  expect(approval.tool_name).toBe('demo.external_write');
  return { runId, approvalId: approval.id, events: await h.t.events(runId) };
}

const writesOf = async (runId: string) =>
  (
    await h.t.platform.db.query<{ content: string }>('SELECT content FROM demo_external_writes WHERE run_id = $1', [
      runId,
    ])
  ).rows;

d('a bridged call that needs approval', () => {
  it('suspends the run like a model call; after approval the program runs again and the write happens once', async () => {
    const { runId, approvalId, events } = await submitProgram();
    const parent = of(events, 'tool.call.proposed').find((e) => e.data.toolName === 'sandbox.run_program')!;
    const bridged = of(events, 'tool.call.proposed').filter((e) => e.data.via === 'bridge');
    expect(bridged.map((e) => e.data.toolName)).toEqual(['math.calculate', 'demo.external_write']);
    const write = bridged[1];
    expect(of(events, 'approval.requested')[0].data).toMatchObject({
      approvalId,
      invocationId: write.data.invocationId,
      toolName: 'demo.external_write',
    });
    expect(of(events, 'tool.call.suspended').map((e) => e.data)).toEqual([
      {
        invocationId: parent.data.invocationId,
        reason: 'bridged_call_awaiting_approval',
        awaitingInvocationId: write.data.invocationId,
        approvalId,
      },
    ]);
    // Neither the program's result nor the write exists while the human decides.
    expect(of(events, 'tool.call.completed').some((e) => e.data.invocationId === parent.data.invocationId)).toBe(false);
    expect(await writesOf(runId)).toEqual([]);

    const r = await call(h.base, 'POST', `/v1/approvals/${approvalId}/resolve`, { body: { decision: 'approve_once' } });
    expect(r.status).toBe(200);
    expect(await h.t.waitForTerminal(runId, 60_000)).toBe('completed');
    expect(await writesOf(runId)).toEqual([{ content: 'the answer is 42' }]);
    const after = await h.t.events(runId);
    // The program ran twice; each bridged call was proposed and executed once.
    expect(of(after, 'tool.call.proposed').filter((e) => e.data.via === 'bridge')).toHaveLength(2);
    expect(of(after, 'tool.call.started').filter((e) => e.data.invocationId === write.data.invocationId)).toHaveLength(
      1,
    );
    expect(of(after, 'tool.call.started').filter((e) => e.data.invocationId === parent.data.invocationId)).toHaveLength(
      2,
    );
    expect(of(after, 'run.resumed')).toHaveLength(1);
    const program = of(after, 'tool.call.completed').find((e) => e.data.invocationId === parent.data.invocationId)!.data
      .result as { data: { stdout: string } };
    expect(program.data.stdout).toMatch(/^sent [0-9a-f-]+/);
  }, 180_000);

  it("approved with edits: the program gets the edited call's result and the write records the edit", async () => {
    const { runId, approvalId } = await submitProgram();
    const r = await call(h.base, 'POST', `/v1/approvals/${approvalId}/resolve`, {
      body: { decision: 'approve_with_edits', arguments: { text: 'edited by a human', target: 'the newsletter' } },
    });
    expect(r.status).toBe(200);
    expect(await h.t.waitForTerminal(runId, 60_000)).toBe('completed');
    expect(await writesOf(runId)).toEqual([{ content: 'edited by a human' }]);
  }, 180_000);

  it('after a denial the program runs again and sees the call refused; nothing is written', async () => {
    const { runId, approvalId } = await submitProgram();
    const r = await call(h.base, 'POST', `/v1/approvals/${approvalId}/resolve`, { body: { decision: 'deny' } });
    expect(r.status).toBe(200);
    expect(await h.t.waitForTerminal(runId, 60_000)).toBe('completed');
    expect(await writesOf(runId)).toEqual([]);
    const after = await h.t.events(runId);
    const program = of(after, 'tool.call.completed').find((e) => {
      const result = e.data.result as { data?: { stdout?: string } };
      return typeof result.data?.stdout === 'string';
    })!.data.result as { data: { stdout: string } };
    expect(program.data.stdout.trim()).toBe('not sent: call_denied');
  }, 180_000);
});
