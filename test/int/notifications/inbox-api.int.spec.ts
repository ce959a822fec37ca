import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * The inbox over a real run (issue 31, ADR 0036): the offline demo model asks for approval of
 * "send hello to the newsletter"; the approval.requested notification is written by the same append
 * as the event, shows up unread, content-free; answering the approval completes the run and marks
 * it read; another tenant and another principal see nothing (404).
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-notify-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
const TEXT = 'send hello to the newsletter';

beforeAll(async () => {
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'alice', scopes: ['user'] }, []);
  tokens.a2 = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alan', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the notifications inbox', () => {
  let notification: WireBody;
  let runId: string;

  it('shows an approval request unread, content-free, with the approval to answer', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('a') });
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: TEXT }] },
      headers: as('a'),
    });
    expect(m.status).toBe(202);
    runId = m.body.run_id;
    notification = await until('the notification', async () => {
      const r = await call(h.base, 'GET', '/v1/notifications', { headers: as('a') });
      return r.body.items.find((n: WireBody) => n.kind === 'approval.requested');
    });
    expect(notification).toMatchObject({
      session_id: s.body.id,
      run_id: runId,
      read_at: null,
      summary: { title: 'An action is waiting for your approval', toolName: 'demo.external_write' },
      links: { run: `/v1/runs/${runId}`, approval: expect.stringMatching(/^\/v1\/approvals\//) },
    });
    // Written by the same statement as its cause: same transaction, same commit. (Both rows record
    // the inserting transaction; xmin would not do, the notifier updates the row's dispatched_at.)
    const same = await h.t.platform.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM events e WHERE e.run_id = $1 AND e.event_type = 'approval.requested'
          AND e.payload->>'approvalId' = $2
          AND e.transaction_id = (SELECT transaction_id FROM notifications WHERE id = $3)`,
      [runId, notification.subject_id, notification.id],
    );
    expect(same.rows[0].n).toBe('1');
    const summary = await call(h.base, 'GET', '/v1/notifications/summary', { headers: as('a') });
    expect(summary.body).toEqual({
      unread: 1,
      by_kind: { 'approval.requested': { unread: 1, total: 1 } },
      last_event_id: expect.stringMatching(/^\d+-\d+$/),
    });
  });

  it('keeps the message text and the tool arguments out of every notification row', async () => {
    const rows = await h.t.platform.db.query(`SELECT to_jsonb(n)::text AS j FROM notifications n`);
    expect(rows.rows.length).toBeGreaterThan(0);
    for (const r of rows.rows) {
      expect(r.j).not.toContain('newsletter');
      expect(r.j).not.toContain('hello');
    }
  });

  it('gives another tenant and another principal 404 and an empty inbox', async () => {
    for (const who of ['b', 'a2']) {
      const read = await call(h.base, 'POST', `/v1/notifications/${notification.id}/read`, { headers: as(who) });
      expect({ who, status: read.status, code: read.body.error.code }).toEqual({ who, status: 404, code: 'not_found' });
      expect((await call(h.base, 'GET', '/v1/notifications', { headers: as(who) })).body.items).toEqual([]);
      expect((await call(h.base, 'GET', '/v1/notifications/summary', { headers: as(who) })).body.unread).toBe(0);
      expect((await call(h.base, 'POST', '/v1/notifications/read-all', { headers: as(who) })).body.marked).toBe(0);
    }
    const still = await call(h.base, 'GET', '/v1/notifications', { headers: as('a') });
    expect(still.body.items[0].read_at).toBeNull();
  });

  it('marks the notification read when the approval is answered, and the run completes', async () => {
    const approvalId = String(notification.subject_id);
    const r = await call(h.base, 'POST', `/v1/approvals/${approvalId}/resolve`, {
      body: { decision: 'approve_once' },
      headers: as('a'),
    });
    expect(r.status).toBe(200);
    const read = (await call(h.base, 'GET', '/v1/notifications', { headers: as('a') })).body.items.find(
      (n: WireBody) => n.id === notification.id,
    );
    expect(read.read_at).toEqual(expect.any(String));
    await until('the run to complete', async () => {
      const run = await call(h.base, 'GET', `/v1/runs/${runId}`, { headers: as('a') });
      return run.body.status === 'completed' ? true : undefined;
    });
    expect((await call(h.base, 'GET', '/v1/notifications/summary', { headers: as('a') })).body.unread).toBe(0);
  });

  it('marks read idempotently and refuses a malformed id with 400', async () => {
    const again = await call(h.base, 'POST', `/v1/notifications/${notification.id}/read`, { headers: as('a') });
    expect(again.status).toBe(200);
    const first = (await call(h.base, 'GET', '/v1/notifications', { headers: as('a') })).body.items[0];
    expect(again.body.read_at).toBe(first.read_at);
    const bad = await call(h.base, 'POST', '/v1/notifications/not-a-uuid/read', { headers: as('a') });
    expect(bad.status).toBe(400);
  });
});
