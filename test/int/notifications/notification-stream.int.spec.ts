import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, parseFrame, readSse, startApi, type ApiHarness, type SseFrame } from '../api/api-harness';

/**
 * The notification stream `GET /v1/notifications/events` (issue 31, ADR 0036) over real HTTP and a
 * real worker: a new notification arrives live as an SSE frame with a stream id; reconnecting with
 * Last-Event-ID replays exactly what came after it; the summary's last_event_id skips the past;
 * another tenant (same principal name) and another principal of the tenant see nothing.
 */
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-notify-sse-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
const TEXT = 'send hello to the newsletter';

beforeAll(async () => {
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'alice', scopes: ['user'] }, []);
  tokens.a2 = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alan', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file, sseHeartbeatSeconds: 1 }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });
const STREAM = () => `${h.base}/v1/notifications/events`;
const notifications = (frames: SseFrame[]) => frames.filter((f) => f.event === 'notification');

/** An open stream collecting its frames until closed. */
function openStream(who: string, lastEventId?: string) {
  const frames: SseFrame[] = [];
  const ac = new AbortController();
  const done = (async () => {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...as(who) };
    if (lastEventId) headers['last-event-id'] = lastEventId;
    const r = await fetch(STREAM(), { headers, signal: ac.signal });
    if (r.status !== 200) throw new Error(`stream status ${r.status}`);
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) return;
      buf += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        frames.push(parseFrame(buf.slice(0, i)));
        buf = buf.slice(i + 2);
      }
    }
  })().catch((e: unknown) => {
    if (!ac.signal.aborted) throw e;
  });
  return {
    frames,
    async until(what: string, f: (frames: SseFrame[]) => boolean, ms = 20_000) {
      const end = Date.now() + ms;
      while (!f(frames)) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      ac.abort();
      await done;
    },
  };
}

async function submit(who: string): Promise<{ sessionId: string; runId: string }> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as(who) });
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text: TEXT }] },
    headers: as(who),
  });
  expect(m.status).toBe(202);
  return { sessionId: s.body.id, runId: m.body.run_id };
}

describe('the notification stream', () => {
  let firstId: string;

  it('sends a new notification live, with a stream id, to its recipient only', async () => {
    const mine = openStream('a');
    const otherTenant = openStream('b');
    const otherPrincipal = openStream('a2');
    try {
      // The streams are attached once their retry frame is in.
      for (const s of [mine, otherTenant, otherPrincipal]) await s.until('the retry frame', (f) => f.length > 0);
      const { runId } = await submit('a');
      await mine.until('the approval notification', (f) => notifications(f).length === 1);
      const [frame] = notifications(mine.frames);
      expect(frame.id).toMatch(/^\d+-\d+$/);
      expect(frame.data).toMatchObject({
        kind: 'approval.requested',
        run_id: runId,
        read_at: null,
        summary: { title: 'An action is waiting for your approval', toolName: 'demo.external_write' },
      });
      expect(JSON.stringify(frame.data)).not.toContain('newsletter');
      firstId = frame.id!;
      // Heartbeats keep coming on the others' streams; a notification never does.
      await otherTenant.until('two heartbeats', (f) => f.filter((x) => x.comment === 'heartbeat').length >= 2);
      expect(notifications(otherTenant.frames)).toEqual([]);
      expect(notifications(otherPrincipal.frames)).toEqual([]);
    } finally {
      await Promise.all([mine.close(), otherTenant.close(), otherPrincipal.close()]);
    }
  });

  it('replays exactly what came after Last-Event-ID, then goes on live', async () => {
    const { runId: second } = await submit('a');
    // Wait until the second one exists, then reconnect from the first.
    await readSse(STREAM(), {
      headers: as('a'),
      until: (f) => notifications(f).some((n) => n.data.run_id === second),
    });
    const replay = openStream('a', firstId);
    try {
      await replay.until('the replayed notification', (f) => notifications(f).length >= 1);
      const { runId: third } = await submit('a');
      await replay.until('the live notification', (f) => notifications(f).length >= 2);
      expect(notifications(replay.frames).map((n) => n.data.run_id)).toEqual([second, third]);
      const ids = notifications(replay.frames).map((n) => n.id!);
      expect(new Set(ids).size).toBe(2);
      expect(ids).not.toContain(firstId);
    } finally {
      await replay.close();
    }
  });

  it('starts after the past when given the summary’s last_event_id (also as ?last_event_id=)', async () => {
    const summary = await call(h.base, 'GET', '/v1/notifications/summary', { headers: as('a') });
    expect(summary.body.last_event_id).toMatch(/^\d+-\d+$/);
    const fresh = openStream('a', summary.body.last_event_id);
    try {
      await fresh.until('the retry frame', (f) => f.length > 0);
      const { runId } = await submit('a');
      await fresh.until('the new notification', (f) => notifications(f).length >= 1);
      expect(notifications(fresh.frames).map((n) => n.data.run_id)).toEqual([runId]);
    } finally {
      await fresh.close();
    }
    const viaQuery = await readSse(`${STREAM()}?last_event_id=${firstId}`, {
      headers: as('a'),
      until: (f) => notifications(f).length >= 3,
    });
    expect(notifications(viaQuery).length).toBe(3);
  });

  it('gives the other tenant and principal an empty replay, and refuses a malformed Last-Event-ID', async () => {
    for (const who of ['b', 'a2']) {
      const frames = await readSse(STREAM(), {
        headers: as(who),
        until: (f) => f.some((x) => x.comment === 'heartbeat'),
      });
      expect(notifications(frames)).toEqual([]);
    }
    for (const bad of ['12', 'abc-1', '1-2-3', '99999999999999999999999-1']) {
      const r = await call(h.base, 'GET', '/v1/notifications/events', {
        headers: { ...as('a'), 'last-event-id': bad },
      });
      expect({ bad, status: r.status, field: r.body.error?.details?.field }).toEqual({
        bad,
        status: 400,
        field: 'last_event_id',
      });
    }
  });
});
