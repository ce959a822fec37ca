import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../../support/processes';
import { ResolveApprovalCommand } from '../../../src/application/approvals/commands';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';

let tdb: TestDb;
let t: TestPlatform;
const procs: Proc[] = [];
const writes = async (runId: string) =>
  Number(
    (await t.platform.db.query('SELECT count(*) AS n FROM demo_external_writes WHERE run_id = $1', [runId])).rows[0].n,
  );

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

describe('demo.external_write with real worker processes', () => {
  const env = () => ({ DATABASE_URL: tdb.url, AGENT_LEASE_SECONDS: '3', AGENT_POLL_INTERVAL_MS: '500' });

  it('never executes without approval, even across a SIGKILL while the run waits; approval then resumes it on another worker', async () => {
    const first = startAgent(['worker'], env());
    procs.push(first);
    const { runId } = await t.submit('send the report to finance');
    await waitFor(
      'waiting_for_approval',
      async () => (await t.platform.runs.get(runId, null))?.status === 'waiting_for_approval',
      30_000,
      50,
    ).catch((e: Error) => {
      throw new Error(`${e.message}; worker output:\n${first.output()}`);
    });
    first.child.kill('SIGKILL');
    await first.exited;
    // Nothing happened and nothing will: the run holds no lease, and no one has approved.
    await new Promise((r) => setTimeout(r, 4000));
    expect(await writes(runId)).toBe(0);
    expect((await t.platform.runs.get(runId, null))?.status).toBe('waiting_for_approval');

    const second = startAgent(['worker'], env());
    procs.push(second);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await writes(runId)).toBe(0);
    const approval = (await t.platform.toolRecords.pendingApprovalsOfRun(runId))[0];
    await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'approve_once', null));
    expect(await t.waitForTerminal(runId, 60_000)).toBe('completed');
    expect(await writes(runId)).toBe(1);
    expect((await t.platform.runs.get(runId, null))?.finalText).toBe('Sent to finance.');
    second.child.kill('SIGTERM');
    await second.exited;
  }, 90_000);

  it('a SIGKILL after effect_sent_at leaves the invocation UNCERTAIN and a new worker does not re-execute it', async () => {
    const first = startAgent(['worker'], env());
    procs.push(first);
    const { runId } = await t.submit('charge', { modelPolicy: 'fake:external_write_tool' });
    await waitFor(
      'waiting_for_approval',
      async () => (await t.platform.runs.get(runId, null))?.status === 'waiting_for_approval',
      30_000,
      50,
    );
    const approval = (await t.platform.toolRecords.pendingApprovalsOfRun(runId))[0];
    await t.commands.execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, approval.id, 'approve_once', null));
    // The kill must land after the effect itself, inside the fake service's 10 s acknowledgement:
    // the watermark alone can be seen before the worker has written the record (a loaded machine).
    await waitFor(
      'the effect watermark and the effect',
      async () =>
        (await t.events(runId)).some((e) => e.type === 'tool.call.effect_started') && (await writes(runId)) === 1,
      30_000,
      20,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    expect(await writes(runId)).toBe(1);
    const second = startAgent(['worker'], env());
    procs.push(second);
    await waitFor(
      'tool.call.uncertain',
      async () => (await t.events(runId)).some((e) => e.type === 'tool.call.uncertain'),
      60_000,
      100,
    );
    await waitFor(
      'waiting for review',
      async () => (await t.platform.runs.get(runId, null))?.status === 'waiting_for_approval',
      30_000,
      50,
    );
    const events = await t.events(runId);
    expect(events.filter((e) => e.type === 'tool.call.started')).toHaveLength(1);
    expect(await writes(runId)).toBe(1);
    const inv = (
      await t.platform.db.query(`SELECT status, effect_sent_at FROM tool_invocations WHERE run_id = $1`, [runId])
    ).rows[0];
    expect(inv.status).toBe('uncertain');
    expect(inv.effect_sent_at).not.toBeNull();
    second.child.kill('SIGTERM');
    await second.exited;
  }, 120_000);
});
