import { createHmac, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

/**
 * Signed webhooks over the outbox (issue 31 item 3, ADR 0036), end to end over real HTTP: a loopback
 * receiver answers 500 three times and then 200; the worker's notifier POSTs the approval.requested
 * notification four times with growing delays, the same delivery id every time, signed the way the
 * docs' snippet verifies, content-free, and logs three failures and one success.
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-webhooks-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
interface Received {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}
const received: Received[] = [];
let receiver: http.Server;
let receiverUrl: string;

/** The verification snippet of docs/notifications.md, verbatim. */
function verify(secret: string, header: string, rawBody: string, toleranceSeconds = 300): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=') as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  const given = Buffer.from(parts.v1 ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

beforeAll(async () => {
  process.env.WEBHOOK_ALLOW_PRIVATE = '1';
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ at: Date.now(), headers: req.headers, body });
      res.statusCode = received.length <= 3 ? 500 : 200;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'alice', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(
    tdb.url,
    { authMode: 'token', authTokensFile: file },
    { worker: true, workerOptions: { notifierIntervalMs: 50, notifierRetryBaseMs: 200 } },
  );
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  await new Promise((r) => receiver.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
  delete process.env.WEBHOOK_ALLOW_PRIVATE;
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });
const count = async (sql: string) => Number((await h.t.platform.db.query<{ n: string }>(sql)).rows[0].n);

describe('webhooks', () => {
  let hook: { id: string; secret: string };

  it('refuses a URL that is not http(s) or reaches a private address, storing nothing', async () => {
    delete process.env.WEBHOOK_ALLOW_PRIVATE;
    try {
      for (const url of [
        'ftp://example.com/x',
        'http://127.0.0.1:9/x',
        'http://169.254.169.254/latest',
        'http://[::1]/',
      ]) {
        const r = await call(h.base, 'POST', '/v1/webhooks', {
          body: { url, kinds: ['approval.requested'] },
          headers: as('a'),
        });
        expect({ url, status: r.status, code: r.body.error.code }).toEqual({
          url,
          status: 400,
          code: 'validation_error',
        });
      }
    } finally {
      process.env.WEBHOOK_ALLOW_PRIVATE = '1';
    }
    const unknownKind = await call(h.base, 'POST', '/v1/webhooks', {
      body: { url: receiverUrl, kinds: ['nope'] },
      headers: as('a'),
    });
    expect(unknownKind.status).toBe(400);
    expect(await count('SELECT count(*)::text AS n FROM webhooks')).toBe(0);
  });

  it('registers an endpoint and shows its secret once', async () => {
    const r = await call(h.base, 'POST', '/v1/webhooks', {
      body: { url: receiverUrl, kinds: ['approval.requested'] },
      headers: as('a'),
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      id: expect.any(String),
      secret: expect.stringMatching(/^whsec_/),
      url: receiverUrl,
    });
    hook = { id: r.body.id, secret: r.body.secret };
    const list = await call(h.base, 'GET', '/v1/webhooks', { headers: as('a') });
    expect(list.body.items).toEqual([
      { id: hook.id, url: receiverUrl, kinds: ['approval.requested'], created_at: expect.any(String) },
    ]);
    expect(JSON.stringify(list.body)).not.toContain(hook.secret);
    expect((await call(h.base, 'GET', `/v1/webhooks/${hook.id}`, { headers: as('b') })).status).toBe(404);
    expect((await call(h.base, 'DELETE', `/v1/webhooks/${hook.id}`, { headers: as('b') })).status).toBe(404);
    expect((await call(h.base, 'GET', '/v1/webhooks', { headers: as('b') })).body.items).toEqual([]);
  });

  it('delivers a signed, content-free approval.requested, retrying 500s with growing delays until a 200', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('a') });
    await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: 'send hello to the newsletter' }] },
      headers: as('a'),
    });
    const end = Date.now() + 30_000;
    while (received.length < 4 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300)); // no fifth attempt after the 200
    expect(received).toHaveLength(4);
    const ids = new Set(received.map((x) => x.headers['x-agent-delivery']));
    expect(ids.size).toBe(1);
    for (const x of received) {
      const body = JSON.parse(x.body);
      expect(body).toMatchObject({
        delivery_id: x.headers['x-agent-delivery'],
        kind: 'approval.requested',
        session_id: s.body.id,
      });
      expect(verify(hook.secret, String(x.headers['x-agent-signature']), x.body)).toBe(true);
      expect(verify('whsec_wrong', String(x.headers['x-agent-signature']), x.body)).toBe(false);
      expect(x.body).not.toContain('newsletter');
      expect(x.body).not.toContain('hello');
    }
    // Trigger commit → first attempt.
    const created = Date.parse(JSON.parse(received[0].body).created_at);
    expect(received[0].at - created).toBeLessThan(1000);
    const gaps = received.slice(1).map((x, i) => x.at - received[i].at);
    expect(gaps[2]).toBeGreaterThan(gaps[0]);
    const attempts = await h.t.platform.db.query<{ outcome: string; status_code: number }>(
      'SELECT outcome, status_code FROM notification_delivery_attempts ORDER BY attempt',
    );
    expect(attempts.rows).toEqual([
      { outcome: 'delivery.failed', status_code: 500 },
      { outcome: 'delivery.failed', status_code: 500 },
      { outcome: 'delivery.failed', status_code: 500 },
      { outcome: 'delivery.succeeded', status_code: 200 },
    ]);
    expect(await count(`SELECT count(*)::text AS n FROM notification_deliveries WHERE status = 'succeeded'`)).toBe(1);
  });

  it('removes an endpoint', async () => {
    expect((await call(h.base, 'DELETE', `/v1/webhooks/${hook.id}`, { headers: as('a') })).status).toBe(204);
    expect((await call(h.base, 'GET', `/v1/webhooks/${hook.id}`, { headers: as('a') })).status).toBe(404);
  });
});
