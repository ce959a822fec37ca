import { generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

/**
 * The device registry (issue 31 item 5): per principal, tenant-isolated (404 across tenants and
 * principals), the public key parsed by node:crypto (PEM or base64 DER SPKI; EC P-256/P-384 or
 * Ed25519), bad input 400 naming the field with nothing stored, the same key twice 409.
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-devices-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};

beforeAll(async () => {
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'alice', scopes: ['user'] }, []);
  tokens.a2 = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alan', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });
const count = async () =>
  Number((await h.t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM devices')).rows[0].n);
const ed = generateKeyPairSync('ed25519').publicKey;
const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;

describe('the device registry', () => {
  let id: string;

  it('registers a device from a PEM Ed25519 key and from a base64 SPKI P-256 key', async () => {
    const pem = String(ed.export({ format: 'pem', type: 'spki' }));
    const r = await call(h.base, 'POST', '/v1/devices', { body: { name: 'phone', public_key: pem }, headers: as('a') });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: 'phone', key_type: 'ed25519', public_key: pem });
    expect(r.body.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    id = r.body.id;
    const b64 = p256.export({ format: 'der', type: 'spki' }).toString('base64');
    const r2 = await call(h.base, 'POST', '/v1/devices', {
      body: { name: 'laptop', public_key: b64 },
      headers: as('a'),
    });
    expect(r2.status).toBe(201);
    expect(r2.body.key_type).toBe('ec-p256');
    const list = await call(h.base, 'GET', '/v1/devices', { headers: as('a') });
    expect(list.body.items.map((d: { name: string }) => d.name)).toEqual(['phone', 'laptop']);
    expect((await call(h.base, 'GET', `/v1/devices/${id}`, { headers: as('a') })).body.name).toBe('phone');
  });

  it('refuses the same key twice (409), nothing stored', async () => {
    const before = await count();
    const pem = String(ed.export({ format: 'pem', type: 'spki' }));
    const r = await call(h.base, 'POST', '/v1/devices', { body: { name: 'again', public_key: pem }, headers: as('a') });
    expect(r.status).toBe(409);
    expect(await count()).toBe(before);
  });

  it("never shows or removes another tenant's or principal's device (404)", async () => {
    for (const who of ['b', 'a2']) {
      expect((await call(h.base, 'GET', `/v1/devices/${id}`, { headers: as(who) })).status).toBe(404);
      expect((await call(h.base, 'DELETE', `/v1/devices/${id}`, { headers: as(who) })).status).toBe(404);
      expect((await call(h.base, 'GET', '/v1/devices', { headers: as(who) })).body.items).toEqual([]);
    }
    expect((await call(h.base, 'DELETE', `/v1/devices/${id}`, { headers: as('a') })).status).toBe(204);
    expect((await call(h.base, 'GET', `/v1/devices/${id}`, { headers: as('a') })).status).toBe(404);
  });

  const rsa = String(
    generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'pem', type: 'spki' }),
  );
  it.each([
    ['a key that is not base64 or PEM', { name: 'x', public_key: 'not a key!' }, 'public_key'],
    ['base64 that is not an SPKI', { name: 'x', public_key: Buffer.from('hello').toString('base64') }, 'public_key'],
    ['an RSA key', { name: 'x', public_key: rsa }, 'public_key'],
    ['an empty name', { name: ' ', public_key: 'MCowBQYDK2VwAyEA' }, 'name'],
    ['no key', { name: 'x' }, 'public_key'],
  ])('refuses %s with 400 naming the field, nothing stored', async (_what, body, field) => {
    const before = await count();
    const r = await call(h.base, 'POST', '/v1/devices', { body, headers: as('a') });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.error)).toContain(field);
    expect(await count()).toBe(before);
  });
});
