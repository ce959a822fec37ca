import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expandScopes } from '../../../src/api/auth/scopes';
import { addTokenToFile } from '../../../src/composition/http';
import type { Principal } from '../../../src/domain/principal';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

// ADR 0032, issue 25 item 4: the approver role (approvals.review) lists and resolves every pending
// approval of its own tenant, is recorded as the resolver, and sees nothing of another tenant.
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-approver-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
const APPROVER = ['approvals.read', 'approvals.resolve', 'approvals.review'];

beforeAll(async () => {
  tokens.alice = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.alan = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alan', scopes: ['user'] }, []);
  tokens.bob = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'bob', scopes: ['user'] }, []);
  tokens.ann = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'ann', scopes: APPROVER }, []);
  tdb = await createTestDb();
  h = await startApi(
    tdb.url,
    { authMode: 'token', authTokensFile: file, dataDir: path.join(dir, 'data') },
    { worker: true },
  );
});
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });

/** `who` asks for an external write; resolves once its approval is pending, with the approval's id. */
async function pendingApprovalOf(who: string): Promise<{ approvalId: string; runId: string }> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as(who) });
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text: 'send the report to billing' }] },
    headers: as(who),
  });
  expect(m.status).toBe(202);
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await call(h.base, 'GET', '/v1/approvals?status=pending', { headers: as(who) });
    const mine = r.body.items.find((a: { run_id: string }) => a.run_id === m.body.run_id);
    if (mine) return { approvalId: String(mine.id), runId: m.body.run_id };
    if (Date.now() > end) throw new Error(`no pending approval for ${who}'s run`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('the approver role (approvals.review)', () => {
  it('is not part of the user preset: a token gets it only by naming it', () => {
    expect(expandScopes('user', []).scopes.has('approvals.review')).toBe(false);
    expect(expandScopes(APPROVER, []).unknown).toEqual([]);
  });

  it('lists and resolves another principal’s approval of its tenant, recorded as the resolver; 404 for another tenant’s', async () => {
    const alices = await pendingApprovalOf('alice');
    const bobs = await pendingApprovalOf('bob');

    // Without the role, a principal of the same tenant sees only its own approvals.
    const alan = await call(h.base, 'GET', '/v1/approvals?status=pending', { headers: as('alan') });
    expect(alan.body.items).toEqual([]);
    expect((await call(h.base, 'GET', `/v1/approvals/${alices.approvalId}`, { headers: as('alan') })).status).toBe(404);

    const listed = await call(h.base, 'GET', '/v1/approvals?status=pending', { headers: as('ann') });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((a: { id: string; principal_id: string }) => [a.id, a.principal_id])).toEqual([
      [alices.approvalId, 'alice'],
    ]);

    // Tenant B's approval does not exist for tenant A's approver, and nothing is written.
    const before = await h.eventCount();
    expect((await call(h.base, 'GET', `/v1/approvals/${bobs.approvalId}`, { headers: as('ann') })).status).toBe(404);
    const foreign = await call(h.base, 'POST', `/v1/approvals/${bobs.approvalId}/resolve`, {
      body: { decision: 'approve_once' },
      headers: as('ann'),
    });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'not_found']);
    expect(await h.eventCount()).toBe(before);

    const resolved = await call(h.base, 'POST', `/v1/approvals/${alices.approvalId}/resolve`, {
      body: { decision: 'approve_once', reason: 'reviewed' },
      headers: as('ann'),
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ status: 'approved', principal_id: 'alice', resolved_by: 'ann' });
    const tenantA: Principal = { tenantId: 'tenant-a', principalId: 'alice', roles: new Set(), scopes: new Set() };
    expect(await h.t.waitForTerminal(alices.runId, 30_000)).toBe('completed');
    const events = await h.t.platform.store.listRunEvents(alices.runId, tenantA);
    const resolution = events.find((e) => e.type === 'approval.resolved');
    expect(resolution?.data).toMatchObject({ decision: 'approved', resolvedBy: 'ann', reason: 'reviewed' });
    expect(resolution?.actorId).toBe('ann');
    // The owner sees who decided.
    const own = await call(h.base, 'GET', `/v1/approvals/${alices.approvalId}`, { headers: as('alice') });
    expect(own.body).toMatchObject({ resolved_by: 'ann', principal_id: 'alice' });
  });
});
