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

describe('PgTransientPublisher: the credential scan of events on deltas (ADR 0042)', () => {
  // Fake, well-formed credentials, built from pieces so the committed-secret scan does not flag this file.
  const openai = `${'sk-'}proj-${'Ab3dEf6hIj9kLm2n'.repeat(3)}`;
  const anthropic = `${'sk-'}ant-api03-${'Zz09_x'.repeat(6)}`;
  const bearer = 'q7Wc2kLp9'.repeat(4);
  const raw = ['Ab3dEf6hIj9kLm2n', 'Zz09_xZz09_x', bearer];

  it('publishes a credential streamed over several deltas redacted, never raw, holding back only what could be one', async () => {
    const warnings: [string, Record<string, unknown> | undefined][] = [];
    const log = {
      info: () => undefined,
      debug: () => undefined,
      error: () => undefined,
      warn: (msg: string, fields?: Record<string, unknown>) => warnings.push([msg, fields]),
      child: () => log,
    };
    const publisher = new PgTransientPublisher(db, log);
    const sessionId = randomUUID();
    const runId = randomUUID();
    const pieces = ['Your key is ', openai.slice(0, 2), openai.slice(2, 14), openai.slice(14), ' and ', 'Bear', 'er '];
    const text = (t: string) => publisher.publish({ sessionId, runId, kind: 'text_delta', text: t });
    await Promise.all([...pieces, bearer, '; done'].map(text));
    await publisher.publish({ sessionId, runId, kind: 'reasoning_delta', text: `the user pasted ${anthropic}` });

    // The model's stream goes on: the key at the end of the reasoning is held, the rest is out.
    const shown = 'Your key is [REDACTED:openai_api_key] and [REDACTED:bearer_token]; done';
    const before = await framesOf(runId, shown.length + 'the user pasted '.length);
    expect(rendered(before)).toEqual([
      { k: 'text_delta', t: shown },
      { k: 'reasoning_delta', t: 'the user pasted ' },
    ]);

    // The stream ends: what was held goes out, redacted.
    await publisher.endOfStream(sessionId, runId);
    const after = await framesOf(runId, before.reduce((n, f) => n + f.t.length, 0) + 28);
    expect(rendered(after)).toEqual([
      { k: 'text_delta', t: shown },
      { k: 'reasoning_delta', t: 'the user pasted [REDACTED:anthropic_api_key]' },
    ]);
    const everything = after.map((f) => f.t).join('');
    for (const body of raw) expect(everything).not.toContain(body);
    expect(after.some((f) => /sk-|Bearer /.test(f.t))).toBe(false);
    // The operator hears of each redaction, never of the value.
    expect(warnings.map(([, f]) => [f?.frameKind, f?.pattern])).toEqual([
      ['text_delta', 'openai_api_key'],
      ['text_delta', 'bearer_token'],
      ['reasoning_delta', 'anthropic_api_key'],
    ]);
    expect(JSON.stringify(warnings)).not.toContain('Ab3dEf6hIj9k');
  });

  it('drops what it held back when the answer supersedes the previews, and sends nothing at the end after that', async () => {
    const publisher = new PgTransientPublisher(db);
    const sessionId = randomUUID();
    const runId = randomUUID();
    await publisher.publish({ sessionId, runId, kind: 'text_delta', text: 'Here it is: ' });
    await publisher.publish({ sessionId, runId, kind: 'text_delta', text: openai.slice(0, 20) });
    await framesOf(runId, 'Here it is: '.length);
    publisher.supersede(sessionId, runId);
    await publisher.endOfStream(sessionId, runId);
    await new Promise((r) => setTimeout(r, 200));

    expect(heard.filter((f) => f.r === runId).map((f) => f.t)).toEqual(['Here it is: ']);
  });
});
