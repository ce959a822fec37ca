import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, isSubsequence, type TestPlatform } from '../../support/platform';
import type { Worker } from '../../../src/runtime/worker';
import { ResolveApprovalCommand, ReviewUncertainInvocationCommand } from '../../../src/application/approvals/commands';
import { CancelRunCommand } from '../../../src/application/runs/cancel-run';
import { ProvideRunInputCommand } from '../../../src/application/runs/provide-input';
import { LOCAL_PRINCIPAL, type Principal } from '../../../src/domain/principal';
import { ConflictError, NotFoundError, ValidationError, AuthorizationError } from '../../../src/domain/errors';

let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;

async function waitForStatus(runId: string, status: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const run = await t.platform.runs.get(runId, null);
    if (run?.status === status) return;
    if (Date.now() > end) throw new Error(`run ${runId} is ${run?.status}, expected ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const writes = async (runId: string) =>
  Number(
    (await t.platform.db.query('SELECT count(*) AS n FROM demo_external_writes WHERE run_id = $1', [runId])).rows[0].n,
  );
const pendingApproval = async (runId: string) => (await t.platform.toolRecords.pendingApprovalsOfRun(runId))[0];

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 3, pollIntervalMs: 200 });
  worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 5000, reaperIntervalMs: 200 });
  await worker.start();
});
afterAll(async () => {
  await worker.stop();
  await t.close();
  await tdb.drop();
});

describe('approvals', () => {
  it('parks the run in waiting_for_approval in the order of plan §9.3, and approval resumes it: the write happens once, after approval', async () => {
    const { runId } = await t.submit('send', { modelPolicy: 'fake:approval_required_tool' });
    await waitForStatus(runId, 'waiting_for_approval');
    const run = await t.platform.runs.get(runId, null);
    expect(run?.leaseOwner).toBeNull();
    expect(await writes(runId)).toBe(0);
    const types = (await t.events(runId)).map((e) => e.type);
    expect(
      isSubsequence(
        ['tool.call.proposed', 'approval.requested', 'run.checkpointed', 'run.waiting_for_approval'],
        types,
      ),
    ).toBe(true);
    expect(types).not.toContain('tool.call.started');
    const approval = await pendingApproval(runId);
    expect(approval.toolName).toBe('demo.external_write');
    expect(approval.policyVersion).toMatch(/^default@2#/);
    expect(approval.expiresAt).not.toBeNull();

    const r = await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'approve_once', null));
    expect(r).toMatchObject({ status: 'approved', run: 'resumed' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    expect(await writes(runId)).toBe(1);
    const after = (await t.events(runId)).map((e) => e.type);
    expect(
      isSubsequence(
        [
          'approval.resolved',
          'run.resumed',
          'run.claimed',
          'tool.call.authorized',
          'tool.call.started',
          'tool.call.effect_started',
          'tool.call.completed',
          'run.completed',
        ],
        after,
      ),
    ).toBe(true);
    const inv = (
      await t.platform.db.query(`SELECT status, effect_sent_at FROM tool_invocations WHERE run_id = $1`, [runId])
    ).rows[0];
    expect(inv.status).toBe('succeeded');
    expect(inv.effect_sent_at).not.toBeNull();
    // A second resolution of the same approval is a conflict and writes nothing.
    const before = (await t.events(runId)).length;
    await expect(
      t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'deny', 'late')),
    ).rejects.toBeInstanceOf(ConflictError);
    expect((await t.events(runId)).length).toBe(before);
  });

  it('turns a denial into a structured tool result; the model says it was not done and nothing is written', async () => {
    const { runId } = await t.submit('send', { modelPolicy: 'fake:approval_denied_tool' });
    await waitForStatus(runId, 'waiting_for_approval');
    const approval = await pendingApproval(runId);
    await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'deny', 'not today'));
    expect(await t.waitForTerminal(runId)).toBe('completed');
    expect(await writes(runId)).toBe(0);
    const events = await t.events(runId);
    const denied = events.find((e) => e.type === 'tool.call.denied');
    expect(denied?.type === 'tool.call.denied' && denied.data.reasonCode).toBe('approval_denied');
    expect(denied?.type === 'tool.call.denied' && denied.data.explanation).toMatch(/NOT performed.*not today/);
    expect(events.some((e) => e.type === 'tool.call.started')).toBe(false);
    expect((await t.platform.runs.get(runId, null))?.finalText).toMatch(/did not send/);
  });

  it('lets exactly one of two concurrent resolutions win; the other gets a conflict', async () => {
    const { runId } = await t.submit('send', { modelPolicy: 'fake:approval_required_tool' });
    await waitForStatus(runId, 'waiting_for_approval');
    const approval = await pendingApproval(runId);
    const results = await Promise.allSettled([
      t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'approve_once', null)),
      t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'deny', 'no')),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0].reason).toBeInstanceOf(ConflictError);
    await t.waitForTerminal(runId);
    expect((await t.events(runId)).filter((e) => e.type === 'approval.resolved')).toHaveLength(1);
    expect((await t.events(runId)).filter((e) => e.type === 'run.resumed')).toHaveLength(1);
  });

  it('refuses bad resolutions with typed errors and writes nothing', async () => {
    const { runId } = await t.submit('send', { modelPolicy: 'fake:approval_required_tool' });
    await waitForStatus(runId, 'waiting_for_approval');
    const approval = await pendingApproval(runId);
    const before = (await t.events(runId)).length;
    const other: Principal = { ...LOCAL_PRINCIPAL, tenantId: 'other-tenant' };
    await expect(
      t.commands.execute(new ResolveApprovalCommand(other, approval.id, 'approve_once', null)),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'yes' as never, null)),
    ).rejects.toBeInstanceOf(ValidationError);
    await expect(
      t.commands.execute(
        new ResolveApprovalCommand(LOCAL_PRINCIPAL, '00000000-0000-4000-8000-000000000000', 'deny', null),
      ),
    ).rejects.toBeInstanceOf(NotFoundError);
    const noScope: Principal = { ...LOCAL_PRINCIPAL, scopes: new Set(['runs.read']) };
    await expect(
      t.commands.execute(new ResolveApprovalCommand(noScope, approval.id, 'approve_once', null)),
    ).rejects.toBeInstanceOf(AuthorizationError);
    await expect(
      t.commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, 'hello')),
    ).rejects.toBeInstanceOf(ConflictError);
    expect((await t.events(runId)).length).toBe(before);
    expect((await t.platform.runs.get(runId, null))?.status).toBe('waiting_for_approval');
    // Cancelling the waiting run cancels it at once and reaps its approval.
    const c = await t.commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'changed my mind'));
    expect(c.outcome).toBe('cancelled');
    expect((await t.platform.toolRecords.approval(approval.id, null))?.status).toBe('denied');
    const types = (await t.events(runId)).map((e) => e.type);
    expect(isSubsequence(['approval.resolved', 'tool.call.denied', 'run.cancelled'], types)).toBe(true);
    expect(await writes(runId)).toBe(0);
  });

  it('expires an approval left past its expiry: approval.resolved(expired), the run finishes without the effect', async () => {
    const { runId } = await t.submit('send', { modelPolicy: 'fake:approval_denied_tool' });
    await waitForStatus(runId, 'waiting_for_approval');
    const approval = await pendingApproval(runId);
    await t.platform.db.query(`UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      approval.id,
    ]);
    expect(await t.waitForTerminal(runId)).toBe('completed'); // the worker's reaper runs every 200 ms here
    const events = await t.events(runId);
    const resolved = events.find((e) => e.type === 'approval.resolved');
    expect(resolved?.type === 'approval.resolved' && resolved.data.decision).toBe('expired');
    const denied = events.find((e) => e.type === 'tool.call.denied');
    expect(denied?.type === 'tool.call.denied' && denied.data.reasonCode).toBe('approval_expired');
    expect(await writes(runId)).toBe(0);
  });
});

describe('uncertain non-idempotent executions', () => {
  it('marks a crash after the effect watermark UNCERTAIN; a new worker does not re-execute; a review decides', async () => {
    await worker.stop();
    const { runId } = await t.submit('charge', { modelPolicy: 'fake:external_write_tool' });
    const first = t.platform.createWorker({ concurrency: 1, pollIntervalMs: 100, drainMs: 0, onlyRunId: runId });
    await first.start();
    await waitForStatus(runId, 'waiting_for_approval');
    await t.commands.execute(
      new ResolveApprovalCommand(LOCAL_PRINCIPAL, (await pendingApproval(runId)).id, 'approve_once', null),
    );
    for (let i = 0; i < 200 && !(await t.events(runId)).some((e) => e.type === 'tool.call.effect_started'); i++)
      await new Promise((r) => setTimeout(r, 25));
    await first.crash();
    expect(await writes(runId)).toBe(1);
    worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 5000, reaperIntervalMs: 200 });
    await worker.start();
    await waitForStatus(runId, 'waiting_for_approval', 20_000);
    const events = await t.events(runId);
    expect(events.filter((e) => e.type === 'tool.call.uncertain')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'tool.call.started')).toHaveLength(1);
    expect(await writes(runId)).toBe(1);
    const inv = (await t.platform.db.query(`SELECT id, status FROM tool_invocations WHERE run_id = $1`, [runId]))
      .rows[0];
    expect(inv.status).toBe('uncertain');
    await t.commands.execute(new ReviewUncertainInvocationCommand(LOCAL_PRINCIPAL, inv.id, 'fail'));
    expect(await t.waitForTerminal(runId)).toBe('completed');
    expect(await writes(runId)).toBe(1);
    const failed = (await t.events(runId)).find((e) => e.type === 'tool.call.failed');
    expect(failed?.type === 'tool.call.failed' && failed.data.errorCode).toBe('uncertain_marked_failed');
  }, 60_000);
});

describe('conversation.ask_user', () => {
  it('waits for the user, resumes the same run on input, and treats a repeated input as a no-op', async () => {
    const { runId } = await t.submit('ask', { modelPolicy: 'fake:ask_user_question' });
    await waitForStatus(runId, 'waiting_for_user');
    expect((await t.platform.runs.get(runId, null))?.leaseOwner).toBeNull();
    const r1 = await t.commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, 'Use the EU region.'));
    expect(r1.outcome).toBe('resumed');
    const r2 = await t.commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, 'Use the EU region.'));
    expect(r2).toEqual({ ...r1, outcome: 'already_provided' });
    expect(await t.waitForTerminal(runId)).toBe('completed');
    const events = await t.events(runId);
    expect(events.filter((e) => e.type === 'run.resumed')).toHaveLength(1);
    const answer = events.find((e) => e.type === 'tool.call.completed');
    expect(answer?.type === 'tool.call.completed' && answer.data).toMatchObject({
      trust: 'user',
      result: { answer: 'Use the EU region.' },
    });
    await expect(
      t.commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, 'Something else')),
    ).rejects.toBeInstanceOf(ConflictError);
    await expect(t.commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, ''))).rejects.toBeInstanceOf(
      ValidationError,
    );
  });
});
