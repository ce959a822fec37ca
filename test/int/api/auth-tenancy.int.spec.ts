import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile, createHttpApp } from '../../../src/composition/http';
import { createTestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, readSse, startApi, type ApiHarness } from './api-harness';
import { seedApproval } from './seed';

let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-tokens-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};

beforeAll(async () => {
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'bob', scopes: ['user'] }, []);
  tokens.a2 = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alan', scopes: ['user'] }, []);
  tokens.readOnly = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['sessions.read'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file, apiMaxActiveRunsPerTenant: 1 });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });
const ask = { content: [{ type: 'text', text: 'What is 2 plus 2?' }] };

describe('token authentication, scopes and tenancy', () => {
  it('stores only token hashes, owner-readable', () => {
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain(tokens.a);
    expect(JSON.parse(text)[0]).toEqual({
      token_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      tenant_id: 'tenant-a',
      principal_id: 'alice',
      scopes: 'user',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(fs.statSync(file).mode & 0o077).toBe(0);
  });

  it('answers 401 without a token or with an unknown one, and 403 when the scope is missing', async () => {
    const none = await call(h.base, 'GET', '/v1/sessions');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('authentication_error');
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect((await call(h.base, 'GET', '/v1/sessions', { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    expect((await call(h.base, 'GET', '/v1/sessions', { headers: as('readOnly') })).status).toBe(200);
    const denied = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('readOnly') });
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({
      code: 'authorization_error',
      details: { required_scope: 'sessions.write' },
    });
    expect((await call(h.base, 'GET', '/health/live')).status).toBe(200);
  });

  it("gives another tenant's and another principal's token 404 for the session, run, events, messages and approvals", async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('a') });
    expect(s.status).toBe(201);
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask, headers: as('a') });
    expect(m.status).toBe(202);
    const approvalId = await seedApproval(
      h.t.platform,
      { sessionId: s.body.id, runId: m.body.run_id, tenantId: 'tenant-a', principalId: 'alice' },
      false,
    );
    expect((await call(h.base, 'GET', `/v1/approvals/${approvalId}`, { headers: as('a') })).status).toBe(200);
    for (const who of ['b', 'a2']) {
      const before = await h.eventCount();
      for (const [method, url, body] of [
        ['GET', `/v1/sessions/${s.body.id}`],
        ['GET', `/v1/sessions/${s.body.id}/messages`],
        ['GET', `/v1/sessions/${s.body.id}/events`],
        ['POST', `/v1/sessions/${s.body.id}/messages`, ask],
        ['DELETE', `/v1/sessions/${s.body.id}`],
        ['GET', `/v1/runs/${m.body.run_id}`],
        ['GET', `/v1/runs/${m.body.run_id}/events`],
        ['POST', `/v1/runs/${m.body.run_id}/cancel`],
        ['GET', `/v1/approvals/${approvalId}`],
        ['POST', `/v1/approvals/${approvalId}/resolve`, { decision: 'deny' }],
      ] as [string, string, unknown?][]) {
        const r = await call(h.base, method, url, { body, headers: as(who) });
        expect({ who, method, url, status: r.status, code: r.body?.error?.code }).toEqual({
          who,
          method,
          url,
          status: 404,
          code: 'not_found',
        });
      }
      expect((await call(h.base, 'GET', '/v1/sessions', { headers: as(who) })).body.items).toEqual([]);
      expect((await call(h.base, 'GET', '/v1/approvals', { headers: as(who) })).body.items).toEqual([]);
      expect(await h.eventCount()).toBe(before);
    }
    // The owner still sees everything, including over SSE.
    const frames = await readSse(`${h.base}/v1/sessions/${s.body.id}/events`, {
      headers: as('a'),
      until: (f) => f.some((x) => x.event === 'approval.requested'),
    });
    expect(frames.filter((f) => f.id).map((f) => f.event)).toEqual([
      'session.created',
      'session.title.changed', // the first message titles the untitled session
      'user.message.created',
      'run.queued',
      'approval.requested',
    ]);
  });

  it("answers 429 with Retry-After when the tenant's concurrent-run ceiling is reached", async () => {
    // tenant-a already has one queued run (no worker runs here) and a ceiling of 1.
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('a2') });
    const before = await h.runCount();
    const r = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask, headers: as('a2') });
    expect(r.status).toBe(429);
    expect(r.body.error.code).toBe('rate_limited');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await h.runCount()).toBe(before);
    // tenant-b is not affected by tenant-a's runs.
    const sb = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('b') });
    expect(
      (await call(h.base, 'POST', `/v1/sessions/${sb.body.id}/messages`, { body: ask, headers: as('b') })).status,
    ).toBe(202);
  });
});

describe('limits and startup', () => {
  it('answers 429 with Retry-After once a tenant exceeds its request rate', async () => {
    const db = await createTestDb();
    const limited = await startApi(db.url, { apiRateLimitPerMinute: 3 });
    try {
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 5; i++) {
        const r = await call(limited.base, 'GET', '/v1/sessions');
        statuses.push(r.status);
        if (r.status === 429) retryAfter = r.headers.get('retry-after');
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    } finally {
      await limited.close();
      await db.drop();
    }
  });

  it('refuses to build the API in token mode without a readable tokens file', async () => {
    const t = await createTestPlatform(tdb.url, { authMode: 'token', authTokensFile: null });
    try {
      await expect(createHttpApp(t.platform)).rejects.toThrow(/AUTH_TOKENS_FILE/);
      const t2 = await createTestPlatform(tdb.url, {
        authMode: 'token',
        authTokensFile: path.join(dir, 'missing.json'),
      });
      await expect(createHttpApp(t2.platform)).rejects.toThrow(/cannot be read/);
      await t2.close();
    } finally {
      await t.close();
    }
  });
});
