import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { Database } from '../../src/adapters/postgres/database';
import { PgTransientPublisher, TRANSIENT_CHANNEL } from '../../src/adapters/postgres/notify/pg-transient-publisher';
import { createTestDb, type TestDb } from '../support/test-db';

interface Frame {
  s: string;
  r: string;
  k: 'text_delta' | 'reasoning_delta';
  t: string;
}

let tdb: TestDb;
let db: Database;
let listener: Client;
const heard: Frame[] = [];

beforeAll(async () => {
  tdb = await createTestDb({ migrated: false });
  db = new Database(tdb.url, 4);
  listener = new Client({ connectionString: tdb.url });
  await listener.connect();
  listener.on('notification', (n) => {
    if (n.channel === TRANSIENT_CHANNEL) heard.push(JSON.parse(n.payload ?? '') as Frame);
  });
  await listener.query(`LISTEN ${TRANSIENT_CHANNEL}`);
});
afterAll(async () => {
  await listener.end();
  await db.close();
  await tdb.drop();
});

/** The frames heard for run `runId`, once their text adds up to `chars` characters (and a moment more, to catch extras). */
async function framesOf(runId: string, chars: number): Promise<Frame[]> {
  const of = () => heard.filter((f) => f.r === runId);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && of().reduce((n, f) => n + f.t.length, 0) < chars)
    await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  return of();
}

/** Consecutive frames of one kind joined: what a client rendering the deltas shows. */
function rendered(frames: readonly Frame[]): { k: string; t: string }[] {
  const out: { k: string; t: string }[] = [];
  for (const f of frames) {
    const last = out.at(-1);
    if (last && last.k === f.k) last.t += f.t;
    else out.push({ k: f.k, t: f.t });
  }
  return out;
}

describe('PgTransientPublisher', () => {
  it('delivers deltas published back to back complete and in order, coalesced into fewer NOTIFYs, kinds not reordered', async () => {
    const publisher = new PgTransientPublisher(db);
    const sessionId = randomUUID();
    const [a, b] = [randomUUID(), randomUUID()];
    const text = (run: string, i: number) => `${run.slice(0, 4)}-${i} `;
    const sends: Promise<void>[] = [];
    const publish = (runId: string, kind: Frame['k'], t: string) =>
      sends.push(publisher.publish({ sessionId, runId, kind, text: t }));
    // Two runs interleaved (as two workers' streams would be), run a switching kinds twice.
    for (let i = 0; i < 60; i++) {
      publish(a, i >= 20 && i < 30 ? 'reasoning_delta' : 'text_delta', text(a, i));
      publish(b, 'text_delta', text(b, i));
    }
    await Promise.all(sends);

    const expectA = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => text(a, from + i)).join('');
    const totalA = expectA(0, 60).length;
    const framesA = await framesOf(a, totalA);
    expect(rendered(framesA)).toEqual([
      { k: 'text_delta', t: expectA(0, 20) },
      { k: 'reasoning_delta', t: expectA(20, 30) },
      { k: 'text_delta', t: expectA(30, 60) },
    ]);
    expect(framesA.length).toBeLessThan(60);
    expect(framesA.every((f) => f.s === sessionId)).toBe(true);

    const expectB = Array.from({ length: 60 }, (_, i) => text(b, i)).join('');
    const framesB = await framesOf(b, expectB.length);
    expect(rendered(framesB)).toEqual([{ k: 'text_delta', t: expectB }]);
    expect(framesB.length).toBeLessThan(60);
  });

  it('still splits long (and coalesced) text into chunks of at most 1500 characters, repeated chunks included', async () => {
    const publisher = new PgTransientPublisher(db);
    const sessionId = randomUUID();
    const runId = randomUUID();
    // A burst that coalesces to well over one chunk, then, on its own, one long delta of a single
    // repeated character: its chunks are identical payloads, which one transaction would deliver once.
    const parts = ['start ', ...Array.from({ length: 40 }, (_, i) => `${String(i).padStart(3, '0')}`.repeat(50))];
    await Promise.all(parts.map((t) => publisher.publish({ sessionId, runId, kind: 'text_delta', text: t })));
    parts.push('x'.repeat(4000));
    await publisher.publish({ sessionId, runId, kind: 'text_delta', text: parts.at(-1)! });
    const expected = parts.join('');
    const frames = await framesOf(runId, expected.length);
    expect(frames.map((f) => f.t).join('')).toBe(expected);
    expect(frames.every((f) => f.t.length <= 1500)).toBe(true);
    expect(frames.length).toBeLessThan(parts.length);
    expect(frames.filter((f) => f.t === 'x'.repeat(1500)).length).toBeGreaterThanOrEqual(2);
  });

  it('sends nothing of a burst superseded in the same turn of the event loop, and only what was in flight of a later one', async () => {
    const publisher = new PgTransientPublisher(db);
    const sessionId = randomUUID();
    const [quick, slow, control] = [randomUUID(), randomUUID(), randomUUID()];
    // A whole answer streamed faster than one send (the fake model at 0 ms): superseded before its
    // first send leaves, it costs no NOTIFY at all, and every publisher is resolved.
    const burst = ['The ', 'result ', 'is ', '391.'].map((t) =>
      publisher.publish({ sessionId, runId: quick, kind: 'text_delta', text: t }),
    );
    publisher.supersede(sessionId, quick);
    await Promise.all(burst);
    // A stream whose first send is in flight when its answer is known: that send completes, what
    // queued behind it is dropped.
    const first = publisher.publish({ sessionId, runId: slow, kind: 'text_delta', text: 'sent ' });
    await new Promise((r) => setImmediate(r));
    const queued = publisher.publish({ sessionId, runId: slow, kind: 'text_delta', text: 'dropped' });
    publisher.supersede(sessionId, slow);
    await Promise.all([first, queued]);
    // Another run's lane is untouched, and supersede of a run with nothing pending is a no-op.
    publisher.supersede(sessionId, randomUUID());
    await publisher.publish({ sessionId, runId: control, kind: 'text_delta', text: 'kept' });
    await framesOf(control, 4);
    expect(heard.filter((f) => f.r === quick)).toEqual([]);
    expect(heard.filter((f) => f.r === slow).map((f) => f.t)).toEqual(['sent ']);
    expect(heard.filter((f) => f.r === control).map((f) => f.t)).toEqual(['kept']);
  });

  it('rejects every publish of a failed send (for the caller to ignore), and a later publish is sent afresh', async () => {
    const closed = new Database(tdb.url, 1);
    await closed.close();
    const failing = new PgTransientPublisher(closed);
    const frame = { sessionId: randomUUID(), runId: randomUUID(), kind: 'text_delta' as const };
    const first = failing.publish({ ...frame, text: 'lost' });
    const coalesced = failing.publish({ ...frame, text: 'also lost' });
    await expect(first).rejects.toThrow();
    await expect(coalesced).rejects.toThrow();
    // The run's lane is gone with its batch: the next delta is not stuck behind it.
    await expect(failing.publish({ ...frame, text: 'again' })).rejects.toThrow();
    expect(heard.filter((f) => f.r === frame.runId)).toEqual([]);
  });
});
