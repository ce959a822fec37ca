import { systemClock } from '../../../src/adapters/system-clock';
import type { Clock } from '../../../src/ports/clock';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * An approval nobody answers (issue 31 acceptance): the reaper warns "expires in 10 minutes" once
 * (`approval.expiring`, default lead 600 s, the approval's principal), then the expiry outcome arrives
 * (`approval.expired`) and the run goes on (`on_expiry: inform_model`). The whole platform runs on a
 * clock the test moves forward; nothing in the database is edited by hand.
 */
let offsetMs = 0;
const movedClock: Clock = {
  nowMs: () => Date.now() + offsetMs,
  nowIso: () => new Date(Date.now() + offsetMs).toISOString(),
  sleep: (ms, signal) => systemClock.sleep(ms, signal),
};

let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(
    tdb.url,
    {},
    { worker: true, workerOptions: { reaperIntervalMs: 200 }, platform: { clock: movedClock } },
  );
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const inbox = async (): Promise<WireBody[]> => (await call(h.base, 'GET', '/v1/notifications?limit=50')).body.items;
const ofKind = (kind: string) => async () => (await inbox()).find((n) => n.kind === kind);

describe('an approval nobody answers', () => {
  it('warns that it expires in 10 minutes, once, then notifies the expiry', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: 'send hello to the newsletter' }] },
    });
    const runId = m.body.run_id;
    const requested = await until('the approval request', ofKind('approval.requested'));
    const approvalId = String(requested.subject_id);
    const approval = (await call(h.base, 'GET', `/v1/approvals/${approvalId}`)).body;
    const expiresAt = Date.parse(approval.expires_at);
    expect(await ofKind('approval.expiring')()).toBeUndefined();

    // Eleven minutes before the deadline: not yet.
    offsetMs = expiresAt - 660_000 - Date.now();
    await new Promise((r) => setTimeout(r, 1000));
    expect(await ofKind('approval.expiring')()).toBeUndefined();

    // Just inside the ten-minute lead: warned, once, however many passes the reaper makes.
    offsetMs = expiresAt - 595_000 - Date.now();
    const warning = await until('the expiry warning', ofKind('approval.expiring'));
    expect(warning).toMatchObject({
      subject_id: requested.subject_id,
      run_id: runId,
      read_at: null,
      summary: { title: 'An approval expires in 10 minutes', toolName: 'demo.external_write' },
      links: { approval: `/v1/approvals/${approvalId}` },
    });
    expect(JSON.stringify(warning)).not.toContain('newsletter');
    await new Promise((r) => setTimeout(r, 1000));
    const warnings = await h.t.platform.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM events WHERE event_type = 'approval.expiring' AND run_id = $1`,
      [runId],
    );
    expect(warnings.rows[0].n).toBe('1');

    // Past the deadline: the expiry outcome, and the run goes on to tell the user.
    offsetMs = expiresAt + 1000 - Date.now();
    const expired = await until('the expiry notification', ofKind('approval.expired'));
    expect(expired).toMatchObject({
      subject_id: requested.subject_id,
      summary: { title: 'An approval expired unanswered' },
    });
    await until('the run to finish', async () => {
      const run = await call(h.base, 'GET', `/v1/runs/${runId}`);
      return ['completed', 'failed'].includes(run.body.status) ? run.body.status : undefined;
    });
    const summary = await call(h.base, 'GET', '/v1/notifications/summary');
    expect(summary.body.by_kind).toMatchObject({
      'approval.requested': { total: 1 },
      'approval.expiring': { total: 1 },
      'approval.expired': { total: 1 },
    });
  });
});
