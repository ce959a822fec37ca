import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLogger } from '../../../src/adapters/logging/pino-logger';
import { systemClock } from '../../../src/adapters/system-clock';
import { addTokenToFile } from '../../../src/composition/http';
import type { Clock } from '../../../src/ports/clock';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, readSse, startApi, type ApiHarness, type WireBody } from '../api/api-harness';

/**
 * Issue 31 acceptance: with a content-free preference (the default), no notification row, no event
 * the notification machinery writes (`approval.expiring`), no delivery record, no log line (debug
 * level, every component) and no webhook body, inbox answer or stream frame contains the message
 * text, the tool's arguments or the question. Alice keeps the default; Carol chose `content: full`,
 * the control: her webhook bodies and inbox do carry her words (so the grep can see them), and
 * still no notification row stores them. Four kinds each: approval requested, question, expiring,
 * expired; every first delivery attempt fails, so the failure path is grepped too.
 */
const WORDS = {
  alice: ['zanzibar-quokka-7731', 'marmalade-list-5150', 'pangolin-whisper-4411'],
  carol: ['ocelot-lantern-2086', 'tapioca-ledger-6190', 'narwhal-crayon-3307'],
} as const;
type Who = keyof typeof WORDS;

let offsetMs = 0;
const movedClock: Clock = {
  nowMs: () => Date.now() + offsetMs,
  nowIso: () => new Date(Date.now() + offsetMs).toISOString(),
  sleep: (ms, signal) => systemClock.sleep(ms, signal),
};

let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-content-free-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
const logLines: string[] = [];
const bodies: Record<Who, string[]> = { alice: [], carol: [] };
/** Bodies the receiver answered 200: the retried, successful deliveries. */
const accepted: Record<Who, string[]> = { alice: [], carol: [] };
const seen = new Set<string>();
let receiver: http.Server;
let receiverBase: string;

beforeAll(async () => {
  process.env.WEBHOOK_ALLOW_PRIVATE = '1';
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const who = req.url === '/carol' ? 'carol' : 'alice';
      bodies[who].push(body);
      const id = String(req.headers['x-agent-delivery']);
      // The first attempt of every delivery fails: the failure log and attempt rows are grepped too.
      res.statusCode = seen.has(id) ? 200 : 500;
      if (res.statusCode === 200) accepted[who].push(body);
      seen.add(id);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  for (const who of ['alice', 'carol'])
    tokens[who] = addTokenToFile(file, { tenantId: 'acme', principalId: who, scopes: ['user'] }, []);
  const logger = createLogger({
    level: 'debug',
    service: 'content-free',
    destination: { write: (line: string) => void logLines.push(line) },
  });
  tdb = await createTestDb();
  h = await startApi(
    tdb.url,
    { authMode: 'token', authTokensFile: file, sseHeartbeatSeconds: 1 },
    {
      worker: true,
      workerOptions: { reaperIntervalMs: 200, notifierIntervalMs: 50, notifierRetryBaseMs: 100 },
      platform: { clock: movedClock, logger },
    },
  );
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  await new Promise((r) => receiver.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
  delete process.env.WEBHOOK_ALLOW_PRIVATE;
});

const as = (who: Who) => ({ authorization: `Bearer ${tokens[who]}` });

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function submit(who: Who, text: string): Promise<void> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as(who) });
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text }] },
    headers: as(who),
  });
  expect(m.status).toBe(202);
}

const inbox = async (who: Who): Promise<WireBody[]> =>
  (await call(h.base, 'GET', '/v1/notifications?limit=50', { headers: as(who) })).body.items;
const kinds = async (who: Who) => new Set((await inbox(who)).map((n) => String(n.kind)));
// Delivered means the retry succeeded, not merely that the failing first attempt arrived.
const delivered = (who: Who, kind: string) => accepted[who].some((b) => (JSON.parse(b) as WireBody).kind === kind);
const KINDS = ['approval.requested', 'run.waiting_for_user', 'approval.expiring', 'approval.expired'];

function expectFreeOf(text: string, words: readonly string[], where: string): void {
  for (const w of words) expect({ where, contains: text.includes(w) }).toEqual({ where, contains: false });
}

describe('content-free notifications', () => {
  it('produce the four kinds for both principals, delivered after a failed first attempt', async () => {
    const full = await call(h.base, 'PUT', '/v1/notifications/preferences', {
      body: { content: 'full' },
      headers: as('carol'),
    });
    expect(full.body.content).toBe('full');
    for (const who of ['alice', 'carol'] as const) {
      const hook = await call(h.base, 'POST', '/v1/webhooks', {
        body: { url: `${receiverBase}/${who}`, kinds: KINDS },
        headers: as(who),
      });
      expect(hook.status).toBe(201);
      const [text, target, question] = WORDS[who];
      await submit(who, `send ${text} to ${target}`);
      await submit(who, `ask me whether ${question} is fine`);
    }
    for (const who of ['alice', 'carol'] as const)
      await until(`${who}'s request and question`, async () => {
        const k = await kinds(who);
        return k.has('approval.requested') && k.has('run.waiting_for_user') ? true : undefined;
      });
    const approval = (await inbox('alice')).find((n) => n.kind === 'approval.requested')!;
    const expiresAt = Date.parse(
      (await call(h.base, 'GET', `/v1/approvals/${String(approval.subject_id)}`, { headers: as('alice') })).body
        .expires_at,
    );
    offsetMs = expiresAt - 590_000 - Date.now();
    for (const who of ['alice', 'carol'] as const)
      await until(`${who}'s expiry warning`, async () =>
        (await kinds(who)).has('approval.expiring') ? true : undefined,
      );
    offsetMs = expiresAt + 5_000 - Date.now();
    for (const who of ['alice', 'carol'] as const) {
      await until(`${who}'s expiry`, async () => ((await kinds(who)).has('approval.expired') ? true : undefined));
      await until(`${who}'s four webhook kinds`, async () =>
        KINDS.every((k) => delivered(who, k)) ? true : undefined,
      );
    }
    const failed = await h.t.platform.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM notification_delivery_attempts WHERE outcome = 'delivery.failed'`,
    );
    expect(Number(failed.rows[0].n)).toBeGreaterThanOrEqual(8);
  });

  it('keep the default principal’s words out of every row, event, record, log line, body and frame', async () => {
    const words = WORDS.alice;
    const db = h.t.platform.db;
    const dump = async (sql: string) => (await db.query<{ j: string }>(sql)).rows.map((r) => r.j).join('\n');
    expectFreeOf(
      await dump(`SELECT to_jsonb(n)::text AS j FROM notifications n`),
      [...words, ...WORDS.carol],
      'notifications',
    );
    expectFreeOf(await dump(`SELECT to_jsonb(d)::text AS j FROM notification_deliveries d`), words, 'deliveries');
    expectFreeOf(await dump(`SELECT to_jsonb(a)::text AS j FROM notification_delivery_attempts a`), words, 'attempts');
    expectFreeOf(
      await dump(`SELECT payload::text AS j FROM events WHERE event_type = 'approval.expiring'`),
      words,
      'approval.expiring events',
    );
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.some((l) => l.includes('webhook delivery failed'))).toBe(true);
    expectFreeOf(logLines.join('\n'), words, 'log lines');
    expect(bodies.alice.length).toBeGreaterThanOrEqual(8);
    expectFreeOf(bodies.alice.join('\n'), words, 'alice webhook bodies');
    expectFreeOf(JSON.stringify(await inbox('alice')), words, 'alice inbox');
    const frames = await readSse(`${h.base}/v1/notifications/events`, {
      headers: as('alice'),
      until: (f) => f.filter((x) => x.event === 'notification').length >= 4,
    });
    expectFreeOf(JSON.stringify(frames), words, 'alice stream');
  });

  it('carry the content to a principal who chose content: full, read from the source rows', async () => {
    const [text, target, question] = WORDS.carol;
    const all = bodies.carol.join('\n');
    for (const w of [text, target, question]) expect(all).toContain(w);
    const items = await inbox('carol');
    const requested = items.find((n) => n.kind === 'approval.requested')!;
    expect(requested.content).toMatchObject({ arguments: { text, target } });
    expect(items.find((n) => n.kind === 'run.waiting_for_user')!.content).toEqual({
      question: `whether ${question} is fine`,
    });
    expect((await inbox('alice')).every((n) => !('content' in n))).toBe(true);
  });
});
