import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { DateTime } from 'luxon';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * Notification preferences (issue 31 item 4) over real HTTP, a real worker and a loopback receiver:
 * `GET/PUT /v1/notifications/preferences`, bad input refused with nothing stored, a kind routed to
 * webhooks only (hidden from the inbox, delivered) or to the inbox only (no delivery), and quiet
 * hours in the principal's IANA zone that hold a webhook delivery until they end while the inbox
 * shows the notification at once.
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-prefs-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
const received: { path: string; body: WireBody }[] = [];
let receiver: http.Server;
let receiverBase: string;
const ALL = ['approval.requested', 'run.waiting_for_user', 'approval.expiring', 'approval.expired', 'run.failed'];

beforeAll(async () => {
  process.env.WEBHOOK_ALLOW_PRIVATE = '1';
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(body) as WireBody });
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  for (const who of ['routes', 'quiet', 'awake'])
    tokens[who] = addTokenToFile(file, { tenantId: 'acme', principalId: who, scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(
    tdb.url,
    { authMode: 'token', authTokensFile: file },
    { worker: true, workerOptions: { notifierIntervalMs: 50 } },
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
const prefs = (who: string) => call(h.base, 'GET', '/v1/notifications/preferences', { headers: as(who) });
const put = (who: string, body: unknown) =>
  call(h.base, 'PUT', '/v1/notifications/preferences', { body, headers: as(who) });

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function setUp(who: string, text: string): Promise<void> {
  const hook = await call(h.base, 'POST', '/v1/webhooks', {
    body: { url: `${receiverBase}/${who}`, kinds: ALL },
    headers: as(who),
  });
  expect(hook.status).toBe(201);
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as(who) });
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text }] },
    headers: as(who),
  });
  expect(m.status).toBe(202);
}

const kindsIn = async (who: string) =>
  ((await call(h.base, 'GET', '/v1/notifications', { headers: as(who) })).body.items as WireBody[]).map((n) =>
    String(n.kind),
  );
const deliveriesOf = async (who: string) =>
  (
    await h.t.platform.db.query<{ kind: string; attempts: number; next: Date }>(
      `SELECT n.kind, d.attempts, d.next_attempt_at AS next FROM notification_deliveries d
         JOIN webhooks w ON w.id = d.webhook_id JOIN notifications n ON n.id = d.notification_id
        WHERE w.principal_id = $1`,
      [who],
    )
  ).rows;

describe('notification preferences', () => {
  it('are the defaults until set, and are replaced whole by PUT', async () => {
    const d = await prefs('routes');
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ content: 'none', quiet_hours: null });
    expect(Object.values(d.body.kinds as Record<string, string>).every((c) => c === 'both')).toBe(true);
    const set = await put('routes', {
      kinds: { 'approval.requested': 'webhook', 'run.waiting_for_user': 'inbox', 'run.failed': 'none' },
    });
    expect(set.status).toBe(200);
    expect(set.body.kinds).toMatchObject({
      'approval.requested': 'webhook',
      'run.waiting_for_user': 'inbox',
      'run.failed': 'none',
      'approval.expired': 'both',
    });
    expect((await prefs('routes')).body).toEqual(set.body);
  });

  it('refuse bad input with 400 naming the field, storing nothing', async () => {
    const before = (await prefs('routes')).body;
    const cases: [unknown, string][] = [
      [{ kinds: { 'approval.requested': 'email' } }, 'kinds.approval.requested'],
      [{ kinds: { 'not.a.kind': 'both' } }, 'kinds.not.a.kind'],
      [{ content: 'everything' }, 'content'],
      [{ quiet_hours: { start: '25:00', end: '07:00', zone: 'UTC' } }, 'quiet_hours.start'],
      [{ quiet_hours: { start: '22:00', end: '07:00', zone: 'Atlantis/Capital' } }, 'quiet_hours.zone'],
      [{ quiet_hours: { start: '22:00', end: '22:00', zone: 'UTC' } }, 'quiet_hours.end'],
    ];
    for (const [body, field] of cases) {
      const r = await put('routes', body);
      expect({ body, status: r.status, field: r.body.error?.details?.field }).toEqual({ body, status: 400, field });
    }
    const unknownField = await put('routes', { kinds: {}, colour: 'red' });
    expect(unknownField.status).toBe(400);
    expect((await prefs('routes')).body).toEqual(before);
  });

  it('route a kind to webhooks only (hidden from the inbox) or to the inbox only (no delivery)', async () => {
    await setUp('routes', 'send hello to the newsletter');
    await until('the approval delivery', async () =>
      received.some((r) => r.path === '/routes' && r.body.kind === 'approval.requested') ? true : undefined,
    );
    expect(await kindsIn('routes')).not.toContain('approval.requested');
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('routes') });
    await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: { content: [{ type: 'text', text: 'ask me which colour' }] },
      headers: as('routes'),
    });
    await until('the question in the inbox', async () =>
      (await kindsIn('routes')).includes('run.waiting_for_user') ? true : undefined,
    );
    // The notifier has passed over it (it is dispatched) and made no delivery.
    await until('the question dispatched', async () => {
      const r = await h.t.platform.db.query(
        `SELECT 1 FROM notifications WHERE kind = 'run.waiting_for_user' AND dispatched_at IS NOT NULL`,
      );
      return r.rowCount ? true : undefined;
    });
    expect((await deliveriesOf('routes')).map((d) => d.kind)).toEqual(['approval.requested']);
    const summary = await call(h.base, 'GET', '/v1/notifications/summary', { headers: as('routes') });
    expect(Object.keys(summary.body.by_kind as object)).toEqual(['run.waiting_for_user']);
  });

  it('hold webhook deliveries during quiet hours in the principal’s zone, not the inbox', async () => {
    const zone = 'Asia/Kolkata';
    const local = DateTime.now().setZone(zone);
    const end = local.plus({ minutes: 60 }).startOf('minute');
    const quiet = await put('quiet', {
      quiet_hours: { start: local.minus({ minutes: 60 }).toFormat('HH:mm'), end: end.toFormat('HH:mm'), zone },
    });
    expect(quiet.status).toBe(200);
    // Quiet hours that do not cover now change nothing.
    const later = local.plus({ hours: 2 });
    await put('awake', {
      quiet_hours: { start: later.toFormat('HH:mm'), end: later.plus({ hours: 1 }).toFormat('HH:mm'), zone },
    });
    await setUp('quiet', 'send hello to the newsletter');
    await setUp('awake', 'send hello to the newsletter');
    await until('the inbox to show it at once', async () =>
      (await kindsIn('quiet')).includes('approval.requested') ? true : undefined,
    );
    await until('the awake principal’s delivery', async () =>
      received.some((r) => r.path === '/awake') ? true : undefined,
    );
    const [held] = await until('the held delivery', async () => {
      const d = await deliveriesOf('quiet');
      return d.length > 0 && d[0].next.getTime() > Date.now() + 30 * 60_000 ? d : undefined;
    });
    expect(held.attempts).toBe(0);
    expect(held.next.toISOString()).toBe(end.toUTC().toISO());
    await new Promise((r) => setTimeout(r, 1000));
    expect(received.filter((r) => r.path === '/quiet')).toEqual([]);
  });
});
