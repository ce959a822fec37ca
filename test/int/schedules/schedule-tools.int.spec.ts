import { call, startApi, type ApiHarness } from '../api/api-harness';
import { createTestDb, type TestDb } from '../../support/test-db';

/**
 * Issue 29 item 7: the conversational schedule tools through the general agent and the demo
 * model, over HTTP with a real worker: writes wait for a human's approval, which shows the cadence
 * in words and the next three firings.
 */
describe('schedule tools in conversation', () => {
  let db: TestDb;
  let api: ApiHarness;

  beforeAll(async () => {
    db = await createTestDb();
    api = await startApi(db.url, {}, { worker: true });
  });

  afterAll(async () => {
    await api?.close();
    await db?.drop();
  });

  /** Submits a message in a new session; returns the run id. */
  async function say(text: string): Promise<string> {
    const s = await call(api.base, 'POST', '/v1/sessions', { body: {} });
    const r = await call(api.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text }] },
    });
    expect(r.status).toBe(202);
    return r.body.run_id;
  }

  async function until<T>(what: string, fn: () => Promise<T | null | undefined>, ms = 30_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const pendingApproval = (runId: string) =>
    until('the approval', async () => {
      const list = await call(api.base, 'GET', '/v1/approvals?status=pending');
      return list.body.items.find((a: { run_id: string }) => a.run_id === runId) as Record<string, string> | undefined;
    });

  const approve = (id: string) =>
    call(api.base, 'POST', `/v1/approvals/${id}/resolve`, { body: { decision: 'approve_once' } });

  it('"every day at 08:00 Europe/Paris say good morning" asks for approval; approved, GET /v1/schedules shows it at 08:00 Paris time', async () => {
    const runId = await say('every day at 08:00 Europe/Paris say good morning');
    const approval = await pendingApproval(runId);
    expect(approval.tool_name).toBe('schedule.create');
    expect(approval.action_summary).toMatch(/every day at 08:00 \(Europe\/Paris\); next: /);
    // The next three firings, each at 08:00 local.
    expect(approval.action_summary.match(/T08:00:00\+0[12]:00/g)).toHaveLength(3);
    expect((await call(api.base, 'GET', '/v1/schedules')).body.items).toHaveLength(0);
    expect((await approve(approval.id)).status).toBe(200);
    expect(await api.t.waitForTerminal(runId, 30_000)).toBe('completed');
    const list = await call(api.base, 'GET', '/v1/schedules');
    expect(list.body.items).toHaveLength(1);
    const s = list.body.items[0];
    expect(s).toMatchObject({
      status: 'active',
      message: 'say good morning',
      scopes: [],
      cadence: { kind: 'daily', time: '08:00', time_zone: 'Europe/Paris' },
    });
    expect(s.next_fire_at_local).toMatch(/T08:00:00\+0[12]:00$/);
    const run = await call(api.base, 'GET', `/v1/runs/${runId}`);
    expect(run.body.final_text).toContain(`Scheduled ${s.id as string}`);
  });

  it('"in 2 minutes remind me to stretch", "list my schedules" and "pause schedule <id>": list needs no approval, pause does', async () => {
    const create = await say('in 2 minutes remind me to stretch');
    const approval = await pendingApproval(create);
    expect(approval.action_summary).toMatch(/once, 120 s after this approval/);
    await approve(approval.id);
    expect(await api.t.waitForTerminal(create, 30_000)).toBe('completed');
    const stretch = (await call(api.base, 'GET', '/v1/schedules')).body.items.find(
      (x: { message: string }) => x.message === 'Reminder: stretch',
    );
    expect(Date.parse(stretch.next_fire_at) - Date.now()).toBeGreaterThan(60_000);

    const list = await say('list my schedules');
    expect(await api.t.waitForTerminal(list, 30_000)).toBe('completed');
    expect((await call(api.base, 'GET', `/v1/runs/${list}`)).body.final_text).toContain(stretch.id);

    const pause = await say(`pause schedule ${stretch.id as string}`);
    const pauseApproval = await pendingApproval(pause);
    expect(pauseApproval.action_summary).toBe(`pause schedule ${stretch.id as string} (revision 1)`);
    await approve(pauseApproval.id);
    expect(await api.t.waitForTerminal(pause, 30_000)).toBe('completed');
    expect((await call(api.base, 'GET', `/v1/schedules/${stretch.id as string}`)).body.status).toBe('paused');
  });

  it('a denied schedule.create creates nothing', async () => {
    const before = (await call(api.base, 'GET', '/v1/schedules')).body.items.length;
    const runId = await say('every monday at 09:30 UTC send the weekly report');
    const approval = await pendingApproval(runId);
    await call(api.base, 'POST', `/v1/approvals/${approval.id}/resolve`, { body: { decision: 'deny' } });
    expect(await api.t.waitForTerminal(runId, 30_000)).toBe('completed');
    expect((await call(api.base, 'GET', `/v1/runs/${runId}`)).body.final_text).toMatch(/did not create the schedule/);
    expect((await call(api.base, 'GET', '/v1/schedules')).body.items.length).toBe(before);
  });
});
