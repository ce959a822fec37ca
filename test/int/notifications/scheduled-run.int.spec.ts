import { createHmac, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Scheduler } from '../../../src/runtime/scheduler';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

/**
 * Issue 31: a scheduled run's result is waiting. A schedule fires (the real scheduler), the real
 * worker runs the occurrence's run on the demo model; its completion — and another occurrence's
 * failure — become notifications in the same append (run.completed / run.failed v2 name the
 * schedule), shown in the inbox and POSTed, signed, by the worker's notifier to a loopback receiver.
 */
let tdb: TestDb;
let h: ApiHarness;
let scheduler: Scheduler;
let receiver: http.Server;
let receiverUrl: string;
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];

/** The verification snippet of docs/notifications.md. */
function verify(secret: string, header: string, rawBody: string): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=') as [string, string]));
  const expected = createHmac('sha256', secret).update(`${parts.t}.${rawBody}`).digest();
  const given = Buffer.from(parts.v1 ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

beforeAll(async () => {
  process.env.WEBHOOK_ALLOW_PRIVATE = '1';
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.statusCode = 200;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  tdb = await createTestDb();
  h = await startApi(tdb.url, {}, { worker: true, workerOptions: { notifierIntervalMs: 50 } });
  scheduler = h.t.platform.schedules.createScheduler({ pollMs: 300 });
});

afterAll(async () => {
  await scheduler?.stop();
  await h?.close();
  await tdb?.drop();
  await new Promise((r) => receiver.close(r));
  delete process.env.WEBHOOK_ALLOW_PRIVATE;
});

async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type Note = {
  id: string;
  kind: string;
  run_id: string;
  summary: Record<string, string>;
  links: Record<string, string>;
  read_at: string | null;
};

describe('a scheduled run notifies its schedule’s owner', () => {
  it('when it completes and when it fails: in the inbox, and signed to the webhook, content-free', async () => {
    const hook = await call(h.base, 'POST', '/v1/webhooks', {
      body: { url: receiverUrl, kinds: ['schedule.occurrence.completed', 'run.failed'] },
    });
    expect(hook.status).toBe(201);
    const ok = await call(h.base, 'POST', '/v1/schedules', {
      body: { message: 'What is 17 multiplied by 23?', cadence: { kind: 'once', in_seconds: 1 } },
    });
    // A second schedule whose run cannot finish within its one model call: it fails.
    const failing = await call(h.base, 'POST', '/v1/schedules', {
      body: {
        message: 'What is 17 multiplied by 23?',
        cadence: { kind: 'once', in_seconds: 1 },
        limits: { max_model_calls: 1, deadline_seconds: 60 },
      },
    });
    expect([ok.status, failing.status]).toEqual([201, 201]);
    await scheduler.start();

    const inbox = await until('both notifications', async () => {
      const r = await call(h.base, 'GET', '/v1/notifications');
      const items = r.body.items as Note[];
      return items.some((n) => n.kind === 'schedule.occurrence.completed') && items.some((n) => n.kind === 'run.failed')
        ? items
        : undefined;
    });
    const runs = await h.t.platform.db.query<{
      id: string;
      schedule_id: string;
      status: string;
      final_text: string | null;
    }>('SELECT id, schedule_id, status, final_text FROM runs ORDER BY created_at');
    const done = runs.rows.find((r) => r.schedule_id === ok.body.id)!;
    const failed = runs.rows.find((r) => r.schedule_id === failing.body.id)!;
    expect([done.status, failed.status]).toEqual(['completed', 'failed']);

    const completedNote = inbox.find((n) => n.kind === 'schedule.occurrence.completed')!;
    expect(completedNote).toMatchObject({
      run_id: done.id,
      read_at: null,
      summary: { title: 'A scheduled run completed' },
      links: { run: `/v1/runs/${done.id}`, schedule: `/v1/schedules/${ok.body.id}` },
    });
    const failedNote = inbox.find((n) => n.kind === 'run.failed')!;
    expect(failedNote).toMatchObject({
      run_id: failed.id,
      summary: { title: 'A scheduled run failed', reason: 'max_model_calls_exceeded' },
      links: { schedule: `/v1/schedules/${failing.body.id}` },
    });
    // Exactly one of each (the dedupe key is the run): no notification for anything else here.
    expect(inbox.filter((n) => n.kind === 'schedule.occurrence.completed')).toHaveLength(1);

    // The events that caused them name the schedule (run.completed / run.failed v2).
    const ends = await h.t.platform.db.query<{ event_type: string; v: number; schedule_id: string }>(
      `SELECT event_type, payload_schema_version AS v, payload->>'scheduleId' AS schedule_id FROM events
        WHERE event_type IN ('run.completed', 'run.failed') ORDER BY id`,
    );
    expect(ends.rows).toEqual(
      expect.arrayContaining([
        { event_type: 'run.completed', v: 2, schedule_id: ok.body.id },
        { event_type: 'run.failed', v: 2, schedule_id: failing.body.id },
      ]),
    );

    // The notifier POSTed both, signed with the endpoint's secret; the answer itself is not in the body.
    const posts = await until('two webhook deliveries', async () => (received.length >= 2 ? received : undefined));
    const kinds = posts.map((p) => (JSON.parse(p.body) as { kind: string }).kind).sort();
    expect(kinds).toEqual(['run.failed', 'schedule.occurrence.completed']);
    for (const p of posts) expect(verify(hook.body.secret, String(p.headers['x-agent-signature']), p.body)).toBe(true);
    const post = posts.find((p) => p.body.includes('schedule.occurrence.completed'))!;
    expect(JSON.parse(post.body)).toMatchObject({ notification_id: completedNote.id, run_id: done.id });
    expect(done.final_text).toBeTruthy();
    expect(post.body).not.toContain(done.final_text!);
  });
});
