import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { Database } from '../../src/adapters/postgres/database';
import { PgEventStore } from '../../src/adapters/postgres/event-store/pg-event-store';
import { rebuildProjections } from '../../src/adapters/postgres/projection-rebuild';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { NewEvent } from '../../src/domain/events/payloads';
import { runLifecycle } from '../../bench/support/run-lifecycle';
import { createTestDb, type TestDb } from '../support/test-db';
import { sessionCreated, TENANT, testClock } from '../support/fixtures';

/**
 * The append statement (append-statement.ts) for every batch size: one typed VALUES row per event,
 * only the changed columns of existing rows; batches of up to eight events as named prepared
 * statements, larger ones unnamed. The same run lifecycles appended one event at a time, two, three,
 * four, six and eight at a time, fifteen at a time, and as 2 + 11 + 2 (an unnamed batch that leaves
 * the session row alone) leave read models that a replay of the log reproduces exactly
 * (`rebuild --verify`), event ids that rise with the sequence, and one notification per append.
 */
let tdb: TestDb;
let db: Database;
let store: PgEventStore;

beforeAll(async () => {
  tdb = await createTestDb();
  db = new Database(tdb.url, 10);
  store = new PgEventStore(db, testClock);
});
afterAll(async () => {
  await db?.close();
  await tdb?.drop();
});

/** `xs` cut into batches of `sizes[0]`, `sizes[1]`, … events, the sizes taken in turn. */
function batchesOf<T>(xs: readonly T[], sizes: readonly number[]): T[][] {
  const out: T[][] = [];
  for (let i = 0, k = 0; i < xs.length; k++) {
    const size = sizes[k % sizes.length];
    out.push(xs.slice(i, i + size));
    i += size;
  }
  return out;
}

describe('append encodings', () => {
  it('writes the same read models whatever the batch size, in order, notifying each append once', async () => {
    const listener = new Client({ connectionString: tdb.url });
    await listener.connect();
    const seen: { channel: string; payload: string }[] = [];
    listener.on('notification', (n) => seen.push({ channel: n.channel, payload: n.payload ?? '' }));
    await listener.query('LISTEN agent_events');
    await listener.query('LISTEN run_ready');
    try {
      const expected = new Map<string, number[][]>();
      const queuedRuns: string[] = [];
      // Batch sizes, cycled over each lifecycle. [2, 11, 2] puts the eleven events from the claim to
      // the second model response in one unnamed batch that leaves the session row alone (its
      // events' insert then carries the read-model generation check itself).
      for (const [p, sizes] of [[1], [2], [3], [4], [6], [8], [15], [2, 11, 2]].entries()) {
        const sid = randomUUID();
        await store.append(sid, [sessionCreated()], { tenantId: TENANT });
        const ranges = [[1, 1]];
        let next = 2;
        for (let run = 0; run < 2; run++) {
          const lifecycle: NewEvent[] = runLifecycle(p * 10 + run);
          for (const batch of batchesOf(lifecycle, sizes)) {
            const r = await store.append(sid, batch, { tenantId: TENANT });
            expect(r.events.map((e) => e.sequence)).toEqual(batch.map((_, i) => next + i));
            ranges.push([next, next + batch.length - 1]);
            next += batch.length;
            for (const e of batch) if (e.type === 'run.queued') queuedRuns.push(e.runId!);
          }
        }
        expected.set(sid, ranges);
        const events = await store.listAfter(sid, 0, { ...LOCAL_PRINCIPAL, tenantId: TENANT });
        expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: next - 1 }, (_, i) => i + 1));
        const ids = events.map((e) => e.id);
        expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      }
      const deadline = Date.now() + 10_000;
      const notified = () =>
        seen
          .filter((n) => n.channel === 'agent_events')
          .map((n) => JSON.parse(n.payload) as { s: string; from: number; to: number });
      while (Date.now() < deadline && notified().length < [...expected.values()].reduce((n, r) => n + r.length, 0))
        await new Promise((r) => setTimeout(r, 20));
      for (const [sid, ranges] of expected)
        expect(
          notified()
            .filter((p) => p.s === sid)
            .map((p) => [p.from, p.to]),
        ).toEqual(ranges);
      expect(seen.filter((n) => n.channel === 'run_ready').map((n) => n.payload)).toEqual(queuedRuns);

      const rebuild = await rebuildProjections(db, { verify: true });
      expect(rebuild.projections.map((p) => [p.name, p.differingRows])).toEqual(
        rebuild.projections.map((p) => [p.name, 0]),
      );
    } finally {
      await listener.end();
    }
  });
});
