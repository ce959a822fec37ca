import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { Database } from '../../src/adapters/postgres/database';
import { PgEventStore } from '../../src/adapters/postgres/event-store/pg-event-store';
import { PgRunJournal } from '../../src/adapters/postgres/event-store/pg-run-journal';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import { rebuildProjections } from '../../src/adapters/postgres/projection-rebuild';
import {
  ConcurrencyConflict,
  CorruptEventError,
  InvalidEventPayloadError,
  LeaseFencedError,
  SecretInPayloadError,
  UnknownEventTypeError,
  ConflictError,
} from '../../src/domain/errors';
import type { NewEvent } from '../../src/domain/events/payloads';
import type { GlobalPosition } from '../../src/ports/event-store';
import { createTestDb, type TestDb } from '../support/test-db';
import { runQueued, sessionCreated, TENANT, testClock, userMessage } from '../support/fixtures';

let tdb: TestDb;
let db: Database;
let store: PgEventStore;
/** The run journal over the same append (the lease holder's fenced writes). */
let journal: PgRunJournal;

beforeAll(async () => {
  tdb = await createTestDb();
  db = new Database(tdb.url, 20);
  store = new PgEventStore(db, testClock);
  journal = new PgRunJournal(store.appender);
});
afterAll(async () => {
  await db.close();
  await tdb.drop();
});

async function newSession(): Promise<string> {
  const id = randomUUID();
  await store.append(id, [sessionCreated()], { tenantId: TENANT });
  return id;
}

/** The first claim of run `runId`, by worker w1 at lease epoch 1. */
function runClaimed(runId: string): NewEvent<'run.claimed'> {
  return { type: 'run.claimed', runId, data: { workerId: 'w1', leaseEpoch: 1, attempt: 1 } };
}

/** The first start of run `runId`, without a deadline or trace. */
function runStarted(runId: string): NewEvent<'run.started'> {
  return { type: 'run.started', runId, data: { attempt: 1, deadlineAt: null, traceId: null, spanId: null } };
}

/** A connection listening on both channels an append notifies, and what it has heard. */
async function listenToAppends(): Promise<{ listener: Client; seen: { channel: string; payload: string }[] }> {
  const listener = new Client({ connectionString: tdb.url });
  await listener.connect();
  const seen: { channel: string; payload: string }[] = [];
  listener.on('notification', (n) => seen.push({ channel: n.channel, payload: n.payload ?? '' }));
  await listener.query('LISTEN agent_events');
  await listener.query('LISTEN run_ready');
  return { listener, seen };
}

/** The `[from, to]` sequence ranges the `agent_events` notifications in `seen` named for session `sid`, in arrival order. */
function notifiedRanges(seen: readonly { channel: string; payload: string }[], sid: string): number[][] {
  return seen
    .filter((n) => n.channel === 'agent_events')
    .map((n) => JSON.parse(n.payload) as { s: string; from: number; to: number })
    .filter((p) => p.s === sid)
    .map((p) => [p.from, p.to]);
}

describe('PgEventStore', () => {
  it('notifies every committed append exactly once, alone or overlapping (always in the statement), and never a refused one', async () => {
    const { listener, seen } = await listenToAppends();
    try {
      const alone = await newSession();
      const runId = randomUUID();
      await store.append(alone, [userMessage('alone'), runQueued(runId)], { tenantId: TENANT });
      await expect(
        store.append(alone, [userMessage('stale')], { tenantId: TENANT, expectedSequence: 1 }),
      ).rejects.toBeInstanceOf(ConcurrencyConflict);
      const overlapping = await Promise.all(Array.from({ length: 6 }, () => newSession()));
      await Promise.all(overlapping.map((sid) => store.append(sid, [userMessage('together')], { tenantId: TENANT })));
      const forSession = (sid: string) => notifiedRanges(seen, sid);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && overlapping.some((sid) => forSession(sid).length < 2))
        await new Promise((r) => setTimeout(r, 20));
      expect(forSession(alone)).toEqual([
        [1, 1],
        [2, 3],
      ]);
      for (const sid of overlapping)
        expect(forSession(sid)).toEqual([
          [1, 1],
          [2, 2],
        ]);
      expect(seen.filter((n) => n.channel === 'run_ready').map((n) => n.payload)).toEqual([runId]);
    } finally {
      await listener.end();
    }
  });

  it('assigns per-session sequences starting at 1 and projects the session row in the same append', async () => {
    const sid = await newSession();
    const r = await store.append(sid, [userMessage('hello')], { tenantId: TENANT });
    expect(r.lastSequence).toBe(2);
    expect(r.events[0].id).toBeGreaterThan(0);
    const row = (
      await db.query(
        'SELECT (SELECT max(e.sequence) FROM events e WHERE e.session_id = s.id) AS last_sequence, message_count, status FROM sessions s WHERE id = $1',
        [sid],
      )
    ).rows[0];
    expect(row).toEqual({ last_sequence: '2', message_count: 1, status: 'active' });
  });

  it('gives 8 concurrent appenders to one session exactly the sequences 1..N with no gaps or duplicates', async () => {
    const sid = await newSession();
    const perWriter = 25;
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < perWriter; i++) await store.append(sid, [userMessage(`w${w} m${i}`)], { tenantId: TENANT });
      }),
    );
    const seqs = (
      await db.query<{ sequence: string }>('SELECT sequence FROM events WHERE session_id = $1 ORDER BY sequence', [sid])
    ).rows.map((r) => Number(r.sequence));
    const n = 1 + 8 * perWriter;
    expect(seqs).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const s = (await db.query('SELECT message_count FROM sessions WHERE id = $1', [sid])).rows[0];
    expect(s).toEqual({ message_count: 8 * perWriter });
  });

  it('writes and notifies nothing when the statement itself finds the session moved (rows cached by another process)', async () => {
    // `store` caches the session at sequence 2; `other` (another process, its own cache) moves it to 3.
    // The pinned expected sequence agrees with the stale cache, so the first refusal can only come
    // from the statement's gate: every part of it (event, run row, idempotency key, NOTIFYs) must see
    // no row. (The store then decides again on fresh rows, which refuses the stale sequence too.)
    const other = new PgEventStore(db, testClock);
    const { listener, seen } = await listenToAppends();
    try {
      const sid = await newSession();
      await store.append(sid, [userMessage('cached here')], { tenantId: TENANT });
      await other.append(sid, [userMessage('appended elsewhere')], { tenantId: TENANT });
      const runId = randomUUID();
      await expect(
        store.append(sid, [runQueued(runId, `key-${runId}`)], { tenantId: TENANT, expectedSequence: 2 }),
      ).rejects.toBeInstanceOf(ConcurrencyConflict);

      const events = await db.query<{ sequence: string }>(
        'SELECT sequence FROM events WHERE session_id = $1 ORDER BY sequence',
        [sid],
      );
      expect(events.rows.map((r) => Number(r.sequence))).toEqual([1, 2, 3]);
      expect((await db.query('SELECT 1 FROM runs WHERE id = $1', [runId])).rowCount).toBe(0);
      expect((await db.query('SELECT 1 FROM idempotency_keys WHERE run_id = $1', [runId])).rowCount).toBe(0);
      const session = (await db.query('SELECT active_run_id, message_count FROM sessions WHERE id = $1', [sid]))
        .rows[0];
      expect(session).toEqual({ active_run_id: null, message_count: 2 });

      // Notifications arrive in commit order: once the next append's has arrived, a notification of
      // the refused one would have arrived before it.
      await other.append(sid, [userMessage('after')], { tenantId: TENANT });
      const forSession = () => notifiedRanges(seen, sid);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !forSession().some(([from]) => from === 4))
        await new Promise((r) => setTimeout(r, 20));
      expect(forSession()).toEqual([
        [1, 1],
        [2, 2],
        [3, 3],
        [4, 4],
      ]);
      expect(seen.filter((n) => n.channel === 'run_ready')).toEqual([]);
    } finally {
      await listener.end();
    }
  });

  it('refuses an append whose expected sequence is stale and writes nothing', async () => {
    const sid = await newSession();
    await expect(
      store.append(sid, [userMessage('x')], { tenantId: TENANT, expectedSequence: 5 }),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect((await store.listAfter(sid, 0, LOCAL_PRINCIPAL)).length).toBe(1);
  });

  it('refuses an unknown event type, an invalid payload and a credential, writing nothing', async () => {
    const sid = await newSession();
    const bad = { type: 'run.exploded', data: {} } as unknown as NewEvent;
    await expect(store.append(sid, [userMessage('ok'), bad], { tenantId: TENANT })).rejects.toBeInstanceOf(
      UnknownEventTypeError,
    );
    const invalid = { type: 'user.message.created', data: { messageId: 'm', content: [] } } as unknown as NewEvent;
    await expect(store.append(sid, [invalid], { tenantId: TENANT })).rejects.toThrow(/user.message.created.*content/);
    await expect(store.append(sid, [invalid], { tenantId: TENANT })).rejects.toBeInstanceOf(InvalidEventPayloadError);
    const secret = userMessage('my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789');
    const err = await store.append(sid, [secret], { tenantId: TENANT }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretInPayloadError);
    expect((err as SecretInPayloadError).message).toContain('content[0].text');
    expect((err as SecretInPayloadError).message).not.toContain('sk-proj');
    expect((await store.listAfter(sid, 0, LOCAL_PRINCIPAL)).map((e) => e.type)).toEqual(['session.created']);
  });

  it('rejects a second non-terminal run in one session through the partial unique index', async () => {
    const sid = await newSession();
    const first = randomUUID();
    await store.append(sid, [runQueued(first)], { tenantId: TENANT });
    const err = await store.append(sid, [runQueued(randomUUID())], { tenantId: TENANT }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).details.activeRunId).toBe(first);
  });

  it('refuses a write fenced by a newer lease epoch', async () => {
    const sid = await newSession();
    const runId = randomUUID();
    await store.append(sid, [runQueued(runId), runClaimed(runId)], { tenantId: TENANT });
    await journal
      .write({ sessionId: sid, tenantId: TENANT, runId, leaseEpoch: 1 }, [
        { type: 'run.claimed', runId, data: { workerId: 'w2', leaseEpoch: 2, attempt: 2 } },
      ])
      .catch(() => undefined);
    // w2 legitimately takes over (no fence), then w1's write is refused.
    await store.append(sid, [{ type: 'run.claimed', runId, data: { workerId: 'w2', leaseEpoch: 2, attempt: 2 } }], {
      tenantId: TENANT,
    });
    await expect(
      journal.write({ sessionId: sid, tenantId: TENANT, runId, leaseEpoch: 1 }, [
        { type: 'run.checkpointed', runId, data: { checkpointVersion: 1, step: 1 } },
      ]),
    ).rejects.toBeInstanceOf(LeaseFencedError);
  });

  it('decides a refusal again on fresh rows when its cached rows are stale (another process moved the session)', async () => {
    // This store (the worker's process) cached the run at epoch 0; another process claims it.
    const other = new PgEventStore(db, testClock);
    {
      const sid = await newSession();
      const runId = randomUUID();
      await store.append(sid, [runQueued(runId)], { tenantId: TENANT });
      await other.append(sid, [runClaimed(runId)], {
        tenantId: TENANT,
      });
      // The holder of epoch 1 is not fenced by the stale cache, and a pinned expected sequence that
      // is right (3: created, queued, claimed) is not refused by it either.
      const ok = await journal.write({ sessionId: sid, tenantId: TENANT, runId, leaseEpoch: 1 }, [runStarted(runId)], {
        expectedSequence: 3,
      });
      expect(ok.lastSequence).toBe(4);
      // A real refusal stays one, decided on fresh rows, and writes nothing.
      await other.append(sid, [{ type: 'run.claimed', runId, data: { workerId: 'w2', leaseEpoch: 2, attempt: 2 } }], {
        tenantId: TENANT,
      });
      const err = await journal
        .write({ sessionId: sid, tenantId: TENANT, runId, leaseEpoch: 1 }, [
          { type: 'run.checkpointed', runId, data: { checkpointVersion: 1, step: 1 } },
        ])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LeaseFencedError);
      expect((err as LeaseFencedError).details.currentEpoch).toBe(2);
      const events = await store.listAfter(sid, 0, LOCAL_PRINCIPAL);
      expect(events.map((e) => e.type)).toEqual([
        'session.created',
        'run.queued',
        'run.claimed',
        'run.started',
        'run.claimed',
      ]);
    }
  });

  it('reads a frozen v1 fixture back in the current shape', async () => {
    const fixture = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'events', 'user.message.created.v1.json'), 'utf8'),
    );
    const sid = await newSession();
    await db.query(
      `INSERT INTO events (session_id, sequence, event_type, payload_schema_version, payload, actor_type, tenant_id, created_at)
       VALUES ($1, 2, $2, $3, $4, 'user', $5, now())`,
      [sid, fixture.event_type, fixture.payload_schema_version, fixture.payload, TENANT],
    );
    const events = await store.listAfter(sid, 1, LOCAL_PRINCIPAL);
    expect(events[0].schemaVersion).toBe(2);
    expect(events[0].data).toEqual(fixture.expected_current);
  });

  it('names the event id when a stored payload has an unknown schema version', async () => {
    const sid = await newSession();
    const r = await db.query<{ id: string }>(
      `INSERT INTO events (session_id, sequence, event_type, payload_schema_version, payload, actor_type, tenant_id, created_at)
       VALUES ($1, 2, 'user.message.created', 99, '{}', 'user', $2, now()) RETURNING id`,
      [sid, TENANT],
    );
    const err = await store.listAfter(sid, 1, LOCAL_PRINCIPAL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptEventError);
    expect((err as Error).message).toContain(`event ${r.rows[0].id}`);
    await db.query('DELETE FROM events WHERE id = $1', [r.rows[0].id]); // keep the global log readable for later tests
  });

  it('never writes back rows cached before a projection repair', async () => {
    const sid = await newSession();
    await store.append(sid, [userMessage('one')], { tenantId: TENANT });
    // A row goes bad; this process reads it (and caches what it derives from it)…
    await db.query('UPDATE sessions SET message_count = 999 WHERE id = $1', [sid]);
    store.forgetCachedState(sid);
    await store.append(sid, [userMessage('two')], { tenantId: TENANT });
    // …then a repair rewrites it from the log…
    await rebuildProjections(db, { verify: false, projections: ['sessions'] });
    expect((await db.query('SELECT message_count FROM sessions WHERE id = $1', [sid])).rows[0]).toEqual({
      message_count: 2,
    });
    // …and the next append from the cache must not bring the bad value back.
    await store.append(sid, [userMessage('three')], { tenantId: TENANT });
    expect((await db.query('SELECT message_count FROM sessions WHERE id = $1', [sid])).rows[0]).toEqual({
      message_count: 3,
    });
  });

  it("writes the session row only when the session's own state changes; the events row is the gate", async () => {
    const sid = await newSession();
    const runId = randomUUID();
    const xmin = async () =>
      (await db.query<{ x: string }>('SELECT xmin::text AS x FROM sessions WHERE id = $1', [sid])).rows[0].x;
    await store.append(sid, [runQueued(runId)], { tenantId: TENANT });
    const afterQueued = await xmin();
    // A run's own progress changes nothing of the session: its row is not written (same tuple).
    const claimed = await store.append(sid, [runClaimed(runId)], { tenantId: TENANT });
    expect(claimed.lastSequence).toBe(3);
    expect(await xmin()).toBe(afterQueued);
    // A message does (message_count, updated_at).
    await store.append(sid, [userMessage('while it runs')], { tenantId: TENANT });
    expect(await xmin()).not.toBe(afterQueued);
    // Readers get the last sequence from the log, however the row was last written.
    const other = new PgEventStore(db, testClock);
    const r = await other.append(sid, [runStarted(runId)], { tenantId: TENANT, expectedSequence: 4 });
    expect(r.lastSequence).toBe(5);
  });

  it('refuses, writing and notifying nothing, an append that leaves the session row alone when its sequence was taken', async () => {
    // `store` caches the session at sequence 3; `other` (another process) takes sequence 4 with an
    // event that does not write the session row either. The pinned expected sequence agrees with the
    // stale cache, so the refusal comes from the statement: the unique (session, sequence) index.
    const other = new PgEventStore(db, testClock);
    const { listener, seen } = await listenToAppends();
    try {
      const sid = await newSession();
      const runId = randomUUID();
      await store.append(sid, [runQueued(runId), runClaimed(runId)], { tenantId: TENANT });
      await other.append(sid, [runStarted(runId)], { tenantId: TENANT });
      const invocationId = randomUUID();
      await expect(
        store.append(
          sid,
          [
            {
              type: 'tool.call.proposed',
              runId,
              data: {
                invocationId,
                step: 1,
                callId: 'call_1',
                toolName: 'calculator',
                toolVersion: '1',
                arguments: { expression: '1 + 1' },
                argumentsHash: 'h',
                idempotencyKey: `${runId}:1:call_1`,
              },
            },
          ],
          { tenantId: TENANT, expectedSequence: 3 },
        ),
      ).rejects.toBeInstanceOf(ConcurrencyConflict);
      const events = await store.listAfter(sid, 0, LOCAL_PRINCIPAL);
      expect(events.map((e) => e.type)).toEqual(['session.created', 'run.queued', 'run.claimed', 'run.started']);
      expect((await db.query('SELECT 1 FROM tool_invocations WHERE id = $1', [invocationId])).rowCount).toBe(0);
      // The next append's notification arrives after any of the refused one would have.
      await other.append(sid, [userMessage('after')], { tenantId: TENANT });
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !notifiedRanges(seen, sid).some(([from]) => from === 5))
        await new Promise((r) => setTimeout(r, 20));
      expect(notifiedRanges(seen, sid)).toEqual([
        [1, 1],
        [2, 3],
        [4, 4],
        [5, 5],
      ]);
    } finally {
      await listener.end();
    }
  });

  it('never writes back run rows cached before a projection repair, when the append leaves the session row alone', async () => {
    const sid = await newSession();
    const runId = randomUUID();
    await store.append(sid, [runQueued(runId)], { tenantId: TENANT });
    // The run row goes bad; this process reads it (and caches what it derives from it)…
    await db.query('UPDATE runs SET model_call_count = 50 WHERE id = $1', [runId]);
    store.forgetCachedState(sid);
    await store.append(sid, [runClaimed(runId)], {
      tenantId: TENANT,
    });
    // …then a repair rewrites it from the log…
    await rebuildProjections(db, { verify: false, projections: ['runs'] });
    const count = async () =>
      (await db.query('SELECT model_call_count FROM runs WHERE id = $1', [runId])).rows[0].model_call_count;
    expect(await count()).toBe(0);
    // …and the next append from the cache (a model call: the session row is not written, so the
    // events' insert checks the generation) must not count on the bad value.
    await store.append(
      sid,
      [
        {
          type: 'model.request.started',
          runId,
          data: {
            modelCallId: randomUUID(),
            step: 1,
            attempt: 1,
            provider: 'fake',
            model: 'fake-1',
            prefixHash: 'p',
            profileName: null,
            profileVersion: null,
            registryVersion: null,
            context: null,
          },
        },
      ],
      { tenantId: TENANT },
    );
    expect(await count()).toBe(1);
  });

  it('hides another tenant’s events', async () => {
    const sid = await newSession();
    expect(await store.listAfter(sid, 0, { ...LOCAL_PRINCIPAL, tenantId: 'other' })).toEqual([]);
  });

  it('never skips an event whose transaction committed after a later-numbered one in the global log', async () => {
    // Drain what exists so far.
    let pos = null as Awaited<ReturnType<PgEventStore['readGlobal']>>['position'];
    for (;;) {
      const page = await store.readGlobal(pos, 1000);
      if (page.events.length === 0) break;
      pos = page.position;
    }
    const sidA = await newSession();
    const sidB = await newSession();
    for (;;) {
      const page = await store.readGlobal(pos, 1000);
      if (page.events.length === 0) break;
      pos = page.position;
    }
    // T1 takes the lower id but commits last.
    const t1 = new Client({ connectionString: tdb.url });
    await t1.connect();
    await t1.query('BEGIN');
    const lower = await store.appender.appendIn(t1, {
      sessionId: sidA,
      tenantId: TENANT,
      events: [userMessage('slow')],
    });
    const higher = await store.append(sidB, [userMessage('fast')], { tenantId: TENANT });
    expect(lower.events[0].id).toBeLessThan(higher.events[0].id);
    // While T1 is open, the reader must not move past it.
    const during = await store.readGlobal(pos, 1000);
    expect(during.events.map((e) => e.id)).not.toContain(higher.events[0].id);
    await t1.query('COMMIT');
    await t1.end();
    // Transaction ids are cluster-wide: a transaction still open in another test database holds the
    // safe horizon back too, so keep reading (bounded) until both events have become safe to deliver.
    const seen: number[] = [];
    const wanted = [lower.events[0].id, higher.events[0].id];
    for (const end = Date.now() + 20_000; Date.now() < end && !wanted.every((id) => seen.includes(id));) {
      const page = await store.readGlobal(pos, 1000);
      if (page.events.length === 0) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      seen.push(...page.events.map((e) => e.id));
      pos = page.position;
    }
    expect(seen.filter((id) => id === lower.events[0].id || id === higher.events[0].id)).toEqual([
      lower.events[0].id,
      higher.events[0].id,
    ]);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("reads the global log in (transaction, id) order through the appends' first events, one event per page or many (ADR 0058)", async () => {
    const drain = async (from: GlobalPosition | null, pageSize: number) => {
      const ids: number[] = [];
      let pos = from;
      // Bounded: a transaction open in another test database holds the horizon back for a moment.
      for (const end = Date.now() + 20_000; Date.now() < end;) {
        const page = await store.readGlobal(pos, pageSize);
        if (page.events.length === 0) {
          if (ids.length >= wanted.length) return { ids, pos };
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        ids.push(...page.events.map((e) => e.id));
        pos = page.position;
      }
      return { ids, pos };
    };
    let wanted: number[] = [];
    const start = (await drain(null, 1000)).pos;
    const [a, b] = [await newSession(), await newSession()];
    wanted = (await drain(start, 1000)).ids;
    // One transaction appends to a, then b, then a again: three appends whose ids interleave sessions.
    const t = new Client({ connectionString: tdb.url });
    await t.connect();
    await t.query('BEGIN');
    const written: number[] = [];
    for (const [sid, texts] of [
      [a, ['a1', 'a2', 'a3']],
      [b, ['b1']],
      [a, ['a4', 'a5']],
    ] as const) {
      const r = await store.appender.appendIn(t, {
        sessionId: sid,
        tenantId: TENANT,
        events: texts.map((x) => userMessage(x)),
      });
      written.push(...r.events.map((e) => e.id));
    }
    await t.query('COMMIT');
    await t.end();
    // And a row inserted by hand (an operator's, or one written before ADR 0058): its own append.
    const byHand = await db.query<{ id: string }>(
      `INSERT INTO events (session_id, sequence, event_type, payload_schema_version, payload, actor_type, tenant_id, created_at)
       VALUES ($1, 3, 'user.message.created', 1, '{"content": [{"type": "text", "text": "by hand"}]}', 'user', $2, now()) RETURNING id`,
      [b, TENANT],
    );
    written.push(Number(byHand.rows[0].id));
    wanted = [...wanted, ...written];
    expect([...written].sort((x, y) => x - y)).toEqual(written);
    for (const pageSize of [1, 2, 4, 1000]) {
      const { ids } = await drain(start, pageSize);
      expect(ids.filter((id) => wanted.includes(id))).toEqual(wanted);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });
});
