import { randomUUID } from 'node:crypto';
import * as net from 'node:net';
import type { NewEvent } from '../../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, parseFrame, readSse, startApi, type ApiHarness, type SseFrame } from './api-harness';

let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, { sseHeartbeatSeconds: 1, fakeModelLatencyMs: 400 }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
});

const ask = (text: string) => ({ content: [{ type: 'text', text }] });
const TERMINAL = (f: { event?: string }) => f.event === 'run.completed' || f.event === 'run.failed';

/**
 * A raw HTTP client: sends `GET path` as HTTP/1.0 or 1.1 and returns the response head and the body
 * bytes received until `done(bodySoFar)` holds (or the server closes).
 */
function rawGet(
  base: string,
  path: string,
  version: '1.0' | '1.1',
  done: (body: string) => boolean,
): Promise<{ head: string; body: Buffer }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let bytes = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error('raw SSE read timed out')), 30_000);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      const end = bytes.indexOf('\r\n\r\n');
      if (err) return reject(err);
      resolve({ head: bytes.subarray(0, end).toString('latin1'), body: bytes.subarray(end + 4) });
    };
    socket.on('data', (b: Buffer) => {
      bytes = Buffer.concat([bytes, b]);
      const end = bytes.indexOf('\r\n\r\n');
      if (end >= 0 && done(bytes.subarray(end + 4).toString('utf8'))) finish();
    });
    socket.on('end', () => finish());
    socket.on('error', (e) => finish(e));
    socket.write(`GET ${path} HTTP/${version}\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  });
}

/** Strict HTTP/1.1 chunked decoding: every chunk is `<hex size>\r\n<size bytes>\r\n`. */
function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  while (pos < body.length) {
    const eol = body.indexOf('\r\n', pos);
    if (eol < 0) break; // a partial chunk header at the end of what was read
    const size = parseInt(body.toString('latin1', pos, eol), 16);
    expect(Number.isInteger(size)).toBe(true);
    if (body.length < eol + 2 + size + 2) break; // a partial chunk at the end of what was read
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    expect(body.toString('latin1', eol + 2 + size, eol + 2 + size + 2)).toBe('\r\n');
    pos = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

const framesOf = (text: string): SseFrame[] =>
  text
    .split('\n\n')
    .slice(0, -1)
    .map((block) => parseFrame(block));

describe('live SSE streams', () => {
  it('streams a session live with id-less transient deltas and comment heartbeats, each persisted event once', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const streaming = readSse(`${h.base}/v1/sessions/${s.body.id}/events`, {
      until: (f) => f.some(TERMINAL) && f.some((x) => x.comment === 'heartbeat'),
      timeoutMs: 30_000,
    });
    await new Promise((r) => setTimeout(r, 200));
    const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
      body: ask('What is 17 multiplied by 23?'),
    });
    const frames = await streaming;
    expect(frames[0].retry).toBe('1000');
    const persisted = frames.filter((f) => f.id !== undefined);
    const seqs = persisted.map((f) => Number(f.id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(persisted.at(-1)?.event).toBe('run.completed');
    const deltas = frames.filter((f) => f.event === 'text_delta');
    expect(deltas.length).toBeGreaterThan(0);
    expect(
      deltas.every((f) => f.id === undefined && f.data.run_id === m.body.run_id && typeof f.data.text === 'string'),
    ).toBe(true);
    expect(frames.some((f) => f.comment === 'heartbeat')).toBe(true);
    const stored = await h.t.platform.store.listAfter(s.body.id, 0, LOCAL_PRINCIPAL);
    expect(seqs).toEqual(stored.map((e) => e.sequence));
  });

  it('loses nothing when the process LISTEN connection is killed mid-run (it reconnects and re-reads the log)', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    let killed = false;
    const streaming = readSse(`${h.base}/v1/sessions/${s.body.id}/events`, {
      timeoutMs: 40_000,
      until: (f) => {
        if (!killed && f.some((x) => x.event === 'model.request.started')) {
          killed = true;
          void h.t.platform.db.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'agent-core-sse' AND datname = current_database()`,
          );
        }
        return f.some(TERMINAL);
      },
    });
    await new Promise((r) => setTimeout(r, 200));
    await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask('What is 6 times 7?') });
    const frames = await streaming;
    expect(killed).toBe(true);
    const seqs = frames.filter((f) => f.id !== undefined).map((f) => Number(f.id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(frames.filter((f) => f.id !== undefined).at(-1)?.event).toBe('run.completed');
  });

  it('shares one LISTEN connection among many clients of the API process', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const streams = Array.from({ length: 20 }, () =>
      readSse(`${h.base}/v1/sessions/${s.body.id}/events`, { until: (f) => f.some(TERMINAL), timeoutMs: 30_000 }),
    );
    await new Promise((r) => setTimeout(r, 300));
    const listens = await h.t.platform.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM pg_stat_activity WHERE application_name = 'agent-core-sse' AND datname = current_database()`,
    );
    expect(listens.rows[0].n).toBe('1');
    await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask('What is 2 plus 2?') });
    const all = await Promise.all(streams);
    const first = all[0].filter((f) => f.id).map((f) => f.id);
    expect(first.length).toBeGreaterThan(5);
    for (const frames of all) expect(frames.filter((f) => f.id).map((f) => f.id)).toEqual(first);
  });

  it('frames HTTP/1.1 streams as well-formed chunks and serves HTTP/1.0 clients the same frames unchunked', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const path = `/v1/sessions/${s.body.id}/events`;
    const completed = (body: string) => body.includes('event: run.completed\n');
    const v11 = rawGet(h.base, path, '1.1', completed);
    const v10 = rawGet(h.base, path, '1.0', completed);
    await new Promise((r) => setTimeout(r, 300));
    await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, { body: ask('What is 3 times 5?') });
    const [a, b] = await Promise.all([v11, v10]);

    expect(a.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(a.head).toMatch(/\r\ntransfer-encoding: chunked/i);
    expect(b.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(b.head).not.toMatch(/transfer-encoding/i);
    const chunked = framesOf(dechunk(a.body).toString('utf8'));
    const plain = framesOf(b.body.toString('utf8'));
    expect(chunked[0].retry).toBe('1000');
    expect(plain[0].retry).toBe('1000');
    const persisted = (frames: SseFrame[]) => frames.filter((f) => f.id !== undefined);
    const seqs = persisted(chunked).map((f) => Number(f.id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(persisted(chunked).at(-1)?.event).toBe('run.completed');
    expect(persisted(plain)).toEqual(persisted(chunked));
    expect(persisted(chunked).every((f) => f.data.sequence === Number(f.id) && f.data.type === f.event)).toBe(true);
  });

  it('delivers a burst of appends (notices arriving while the hub reads and writes) to every client gapless, live and on replay', async () => {
    const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
    const sessionId = String(s.body.id);
    const appends = 120; // one event each, back to back
    const last = 1 + appends;
    const upToLast = (f: SseFrame[]) => f.some((x) => Number(x.id) === last);
    const live = Array.from({ length: 10 }, () =>
      readSse(`${h.base}/v1/sessions/${sessionId}/events`, { until: upToLast, timeoutMs: 30_000 }),
    );
    await new Promise((r) => setTimeout(r, 300));
    let resumed: Promise<SseFrame[]> | null = null;
    for (let i = 0; i < appends; i++) {
      // Messages only: no run, so the test's worker does not append to the session meanwhile.
      const event: NewEvent = {
        type: 'user.message.created',
        runId: null,
        actorType: 'user',
        actorId: 'local-user',
        data: { messageId: randomUUID(), content: [{ type: 'text', text: `burst ${i}` }] },
      };
      await h.t.platform.store.append(sessionId, [event], { tenantId: 'local' });
      // A client that joins mid-burst, resuming after sequence 10.
      if (i === appends / 2)
        resumed = readSse(`${h.base}/v1/sessions/${sessionId}/events`, {
          headers: { 'last-event-id': '10' },
          until: upToLast,
          timeoutMs: 30_000,
        });
    }
    const all = await Promise.all(live);
    const expected = Array.from({ length: last }, (_, i) => String(i + 1));
    for (const frames of all) expect(frames.filter((f) => f.id !== undefined).map((f) => f.id)).toEqual(expected);
    const later = await resumed!;
    expect(later.filter((f) => f.id !== undefined).map((f) => f.id)).toEqual(expected.slice(10));
  });
});
