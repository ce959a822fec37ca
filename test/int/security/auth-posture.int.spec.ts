import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { revokeToken } from '../../../src/api/auth/token-admin';
import { sha256Hex, writeTokenEntries, type TokenFileEntry } from '../../../src/api/auth/token-file';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

// ADR 0032, issue 25 items 2 and 3 over real HTTP: dev mode refuses proxied requests; a malformed,
// expired or revoked token gets the same 401 envelope, and nothing of a refused request is stored.
let tdb: TestDb;
let dev: ApiHarness;
let tok: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-auth-posture-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};

beforeAll(async () => {
  tokens.live = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
  tokens.expired = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
  tokens.revoked = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
  // Expired an hour ago (written directly: the CLI refuses an expiry in the past).
  const entries = JSON.parse(fs.readFileSync(file, 'utf8')) as TokenFileEntry[];
  const hash = sha256Hex(tokens.expired);
  writeTokenEntries(
    file,
    entries.map((e) =>
      e.token_sha256 === hash ? { ...e, expires_at: new Date(Date.now() - 3_600_000).toISOString() } : e,
    ),
  );
  revokeToken(file, sha256Hex(tokens.revoked).slice(0, 12));
  tdb = await createTestDb();
  dev = await startApi(tdb.url, { authMode: 'dev' });
  tok = await startApi(tdb.url, { authMode: 'token', authTokensFile: file });
});
afterAll(async () => {
  await dev?.close();
  await tok?.close();
  await tdb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('AUTH_MODE=dev behind a proxy', () => {
  it.each(['X-Forwarded-For', 'X-Real-IP', 'Forwarded'])(
    'answers a loopback request carrying %s with 401 and stores nothing',
    async (header) => {
      const before = await dev.eventCount();
      const r = await call(dev.base, 'POST', '/v1/sessions', {
        body: {},
        headers: { [header]: header === 'Forwarded' ? 'for=203.0.113.7' : '203.0.113.7' },
      });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'authentication_error' });
      expect(r.body.error.message).toContain('AUTH_MODE=token');
      expect(await dev.eventCount()).toBe(before);
    },
  );

  it('still serves the same request without the proxy header', async () => {
    expect((await call(dev.base, 'GET', '/v1/sessions')).status).toBe(200);
  });
});

describe('tokens that authenticate nobody', () => {
  it('gives a malformed, an unknown, an expired and a revoked token the same 401 envelope, and stores nothing', async () => {
    const before = await tok.eventCount();
    const answers = [];
    for (const authorization of [
      'Bearer two words',
      'Token abc',
      'Bearer agc_unknown',
      `Bearer ${tokens.expired}`,
      `Bearer ${tokens.revoked}`,
    ]) {
      const r = await call(tok.base, 'POST', '/v1/sessions', { body: {}, headers: { authorization } });
      answers.push([r.status, r.body.error.code, r.body.error.message, r.body.error.details]);
    }
    expect(new Set(answers.map((a) => JSON.stringify(a)))).toEqual(
      new Set([JSON.stringify([401, 'authentication_error', 'the bearer token is not valid', {}])]),
    );
    expect(await tok.eventCount()).toBe(before);
    expect(
      (await call(tok.base, 'POST', '/v1/sessions', { body: {}, headers: { authorization: `Bearer ${tokens.live}` } }))
        .status,
    ).toBe(201);
  });
});
