import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * `POST /v1/notifications` (issue 31 item 2): an admin-scoped external producer posts with an
 * Idempotency-Key; the same key and body twice is the same notification (201, then 200); the same
 * key with another body is 409; bad input is 400 naming the field, nothing stored; the recipient
 * sees it in the inbox, another tenant never.
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-post-notify-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};

beforeAll(async () => {
  tokens.admin = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'ops', scopes: ['admin'] }, []);
  tokens.adminB = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'ops', scopes: ['admin'] }, []);
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'alice', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string, key?: string) => ({
  authorization: `Bearer ${tokens[who]}`,
  ...(key !== undefined ? { 'idempotency-key': key } : {}),
});
const body = {
  recipient: 'alice',
  kind: 'external.notice',
  summary: { title: 'The nightly export finished', source: 'exporter' },
  links: { details: 'https://exporter.example.com/runs/42' },
};
const count = async () =>
  Number((await h.t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM notifications')).rows[0].n);

describe('POST /v1/notifications', () => {
  let posted: WireBody;

  it('posts once per key: 201, then the same notification with 200', async () => {
    const first = await call(h.base, 'POST', '/v1/notifications', { body, headers: as('admin', 'export-42') });
    expect(first.status).toBe(201);
    posted = first.body;
    expect(posted).toMatchObject({
      kind: 'external.notice',
      recipient: 'alice',
      read_at: null,
      summary: body.summary,
      links: body.links,
    });
    const again = await call(h.base, 'POST', '/v1/notifications', { body, headers: as('admin', 'export-42') });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(posted.id);
    expect(await count()).toBe(1);
  });

  it('refuses the same key with another body (409), nothing stored', async () => {
    const other = { ...body, summary: { title: 'Something else' } };
    const r = await call(h.base, 'POST', '/v1/notifications', { body: other, headers: as('admin', 'export-42') });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('conflict');
    expect(await count()).toBe(1);
  });

  it("shows it in the recipient's inbox, never another tenant's", async () => {
    const inbox = await call(h.base, 'GET', '/v1/notifications', { headers: as('a') });
    expect(inbox.body.items.map((n: WireBody) => n.id)).toEqual([posted.id]);
    const other = await call(h.base, 'GET', '/v1/notifications', { headers: as('b') });
    expect(other.body.items).toEqual([]);
    expect((await call(h.base, 'POST', `/v1/notifications/${posted.id}/read`, { headers: as('b') })).status).toBe(404);
    // The same key in tenant B is another notification, in B.
    const b = await call(h.base, 'POST', '/v1/notifications', { body, headers: as('adminB', 'export-42') });
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(posted.id);
    expect((await call(h.base, 'GET', '/v1/notifications', { headers: as('b') })).body.items).toHaveLength(1);
    expect((await call(h.base, 'GET', '/v1/notifications', { headers: as('a') })).body.items).toHaveLength(1);
  });

  it('needs the admin scope', async () => {
    const r = await call(h.base, 'POST', '/v1/notifications', { body, headers: as('a', 'k-user') });
    expect(r.status).toBe(403);
  });

  it.each([
    ['no Idempotency-Key', body, undefined, 'idempotency_key'],
    ['an unknown kind', { ...body, kind: 'nope' }, 'k1', 'kind'],
    ['no title', { ...body, summary: { source: 'x' } }, 'k2', 'summary.title'],
    ['a summary value that is not a string', { ...body, summary: { title: 't', n: 1 } }, 'k3', 'summary.n'],
    ['a link that is not a path or http(s) URL', { ...body, links: { x: 'javascript:alert(1)' } }, 'k4', 'links.x'],
    ['a recipient with spaces', { ...body, recipient: 'a b' }, 'k5', 'recipient'],
  ])('refuses %s with 400 naming the field, nothing stored', async (_what, b, key, field) => {
    const before = await count();
    const r = await call(h.base, 'POST', '/v1/notifications', { body: b, headers: as('admin', key) });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('validation_error');
    expect(JSON.stringify(r.body.error)).toContain(field);
    expect(await count()).toBe(before);
  });
});
