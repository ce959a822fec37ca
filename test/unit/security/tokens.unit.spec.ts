import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Authenticator } from '../../../src/api/auth/authenticator';
import { expiryFrom, listTokens, revokeToken } from '../../../src/api/auth/token-admin';
import { addTokenToFile, loadTokenFile, sha256Hex, tokenId } from '../../../src/api/auth/token-file';
import type { ApiRequest } from '../../../src/api/request-context';
import { assertAuthPosture, isLoopbackHost } from '../../../src/config/auth-posture';
import { AuthenticationError, ConfigurationError } from '../../../src/domain/errors';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-token-unit-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;
const freshFile = () => path.join(dir, `tokens-${++n}.json`);

const req = (headers: Record<string, string> = {}, peer = '127.0.0.1'): ApiRequest => ({
  method: 'GET',
  url: '/v1/sessions',
  headers,
  socket: { remoteAddress: peer },
});
const bearer = (token: string) => req({ authorization: `Bearer ${token}` });
const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(AuthenticationError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('the tokens file (ADR 0032)', () => {
  it('refuses an unknown scope at load, naming the file and the line of its entry', () => {
    const file = freshFile();
    const good = { token_sha256: 'a'.repeat(64), tenant_id: 't', principal_id: 'p', scopes: ['runs.read'] };
    const bad = { ...good, token_sha256: 'b'.repeat(64), scopes: ['runs.read', 'runs.admin'] };
    fs.writeFileSync(file, JSON.stringify([good, bad], null, 2));
    let err: unknown;
    try {
      loadTokenFile(file, []);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigurationError);
    // The second entry opens on line 10 of the pretty-printed file.
    expect((err as Error).message).toBe(`AUTH_TOKENS_FILE ${file} line 10 (entry #1): unknown scope(s) runs.admin`);
    expect((err as ConfigurationError).details).toMatchObject({ file, line: 10, unknown: ['runs.admin'] });
  });

  it('refuses a malformed expiry with the line too', () => {
    const file = freshFile();
    fs.writeFileSync(
      file,
      `[{"token_sha256": "${'c'.repeat(64)}", "tenant_id": "t", "principal_id": "p", "scopes": "user", "expires_at": "soon"}]`,
    );
    expect(() => loadTokenFile(file, [])).toThrow(/line 1 \(entry #0\): expires_at must be an ISO-8601 date-time/);
  });

  it('records created_at and an optional expires_at; lists tokens by id with their status, never the token', () => {
    const file = freshFile();
    const now = new Date('2030-01-01T00:00:00Z');
    const a = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, [], now);
    const b = addTokenToFile(
      file,
      { tenantId: 't', principalId: 'q', scopes: ['runs.read'], expiresAt: '2030-01-02T00:00:00Z' },
      [],
      now,
    );
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain(a);
    expect(text).not.toContain(b);
    const rows = listTokens(file, new Date('2030-01-03T00:00:00Z'));
    expect(rows).toEqual([
      expect.objectContaining({ id: sha256Hex(a).slice(0, 12), principalId: 'p', status: 'active', expiresAt: null }),
      expect.objectContaining({
        id: sha256Hex(b).slice(0, 12),
        status: 'expired',
        expiresAt: '2030-01-02T00:00:00.000Z',
      }),
    ]);
    expect(rows[0].createdAt).toBe('2030-01-01T00:00:00.000Z');
  });

  it('revokes by id: stamps revoked_at, keeps the entry, and a second revoke changes nothing', () => {
    const file = freshFile();
    const a = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
    const id = tokenId({ token_sha256: sha256Hex(a) });
    const first = revokeToken(file, id, new Date('2030-01-01T00:00:00Z'));
    expect(first).toMatchObject({ alreadyRevoked: false, token: { id, status: 'revoked' } });
    const before = fs.readFileSync(file, 'utf8');
    expect(revokeToken(file, id).alreadyRevoked).toBe(true);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(loadTokenFile(file, []).size).toBe(0);
    expect(() => revokeToken(file, 'ffffffff')).toThrow(/no token with id ffffffff/);
    expect(() => revokeToken(file, 'xyz')).toThrow(/8 to 64 hex digits/);
  });
});

describe('the authenticator in token mode', () => {
  it('answers a malformed, unknown, expired and revoked token alike, with nothing that tells which', () => {
    const file = freshFile();
    let now = Date.parse('2030-01-01T00:00:00Z');
    const live = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
    const expiring = addTokenToFile(
      file,
      { tenantId: 't', principalId: 'p', scopes: ['user'], expiresAt: '2030-01-01T01:00:00Z' },
      [],
    );
    const revoked = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
    revokeToken(file, sha256Hex(revoked).slice(0, 12));
    const auth = new Authenticator({ mode: 'token', tokensFile: file, toolScopes: [] }, undefined, () => now);
    expect(auth.authenticate(bearer(live)).principalId).toBe('p');
    expect(auth.authenticate(bearer(expiring)).principalId).toBe('p');
    now += 2 * 3_600_000;
    const messages = [
      refusal(() => auth.authenticate(req({ authorization: 'Bearer two words' }))),
      refusal(() => auth.authenticate(req({ authorization: 'Basic abc' }))),
      refusal(() => auth.authenticate(bearer('agc_unknown'))),
      refusal(() => auth.authenticate(bearer(expiring))),
      refusal(() => auth.authenticate(bearer(revoked))),
    ];
    expect(new Set(messages)).toEqual(new Set(['the bearer token is not valid']));
    expect(refusal(() => auth.authenticate(req()))).toMatch(/a bearer token is required/);
  });

  it('sees a revocation on the very next request, and re-reads the file on reload() (SIGHUP)', () => {
    const file = freshFile();
    const a = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
    const auth = new Authenticator({ mode: 'token', tokensFile: file, toolScopes: [] });
    expect(auth.authenticate(bearer(a)).tenantId).toBe('t');
    revokeToken(file, sha256Hex(a).slice(0, 12));
    refusal(() => auth.authenticate(bearer(a)));
    const b = addTokenToFile(file, { tenantId: 't', principalId: 'r', scopes: ['user'] }, []);
    auth.reload();
    expect(auth.authenticate(bearer(b)).principalId).toBe('r');
  });

  it('keeps the previous tokens when the file turns bad', () => {
    const file = freshFile();
    const a = addTokenToFile(file, { tenantId: 't', principalId: 'p', scopes: ['user'] }, []);
    const errors: string[] = [];
    const log = { info() {}, warn() {}, debug() {}, error: (m: string) => errors.push(m), child: () => log };
    const auth = new Authenticator({ mode: 'token', tokensFile: file, toolScopes: [] }, log);
    fs.writeFileSync(file, '[{"oops": ');
    expect(auth.authenticate(bearer(a)).principalId).toBe('p');
    expect(auth.authenticate(bearer(a)).principalId).toBe('p');
    expect(errors).toEqual(['AUTH_TOKENS_FILE could not be reloaded; keeping the previous tokens']);
  });
});

describe('AUTH_MODE=dev', () => {
  const dev = new Authenticator({ mode: 'dev', tokensFile: null, toolScopes: [] });

  it('refuses a loopback request that came through a proxy', () => {
    for (const h of ['Forwarded', 'X-Forwarded-For', 'X-Real-IP'])
      expect(refusal(() => dev.authenticate(req({ [h.toLowerCase()]: '203.0.113.7' })))).toMatch(
        /came through a proxy .*AUTH_MODE=token/,
      );
    expect(dev.authenticate(req()).principalId).toBe('local-user');
    expect(refusal(() => dev.authenticate(req({}, '10.0.0.2')))).toMatch(/this machine only/);
  });

  it('may listen on loopback only; elsewhere start is refused naming AUTH_MODE=token', () => {
    for (const h of ['127.0.0.1', 'localhost', '::1', '127.0.1.1']) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ['0.0.0.0', '::', '192.168.1.4', 'example.com']) expect(isLoopbackHost(h)).toBe(false);
    expect(() => assertAuthPosture({ authMode: 'dev', host: '0.0.0.0' })).toThrow(/AUTH_MODE=token/);
    expect(() => assertAuthPosture({ authMode: 'token', host: '0.0.0.0' })).not.toThrow();
    expect(() => assertAuthPosture({ authMode: 'dev', host: '127.0.0.1' })).not.toThrow();
  });
});

describe('agent auth token create --expires-in / --expires-at', () => {
  const now = new Date('2030-01-01T00:00:00Z');
  it('turns a duration or an instant into the expiry, and refuses anything else', () => {
    expect(expiryFrom({ expiresIn: '30d' }, now)).toBe('2030-01-31T00:00:00.000Z');
    expect(expiryFrom({ expiresIn: '90m' }, now)).toBe('2030-01-01T01:30:00.000Z');
    expect(expiryFrom({ expiresAt: '2030-02-01T00:00:00Z' }, now)).toBe('2030-02-01T00:00:00.000Z');
    expect(expiryFrom({}, now)).toBeNull();
    expect(() => expiryFrom({ expiresIn: '0d' }, now)).toThrow(/positive/);
    expect(() => expiryFrom({ expiresIn: '1w' }, now)).toThrow(/s, m, h or d/);
    expect(() => expiryFrom({ expiresAt: '2029-01-01T00:00:00Z' }, now)).toThrow(/not in the future/);
    expect(() => expiryFrom({ expiresAt: 'x', expiresIn: '1d' }, now)).toThrow(/not both/);
  });
});
