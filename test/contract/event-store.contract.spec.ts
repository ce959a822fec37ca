import { randomUUID } from 'node:crypto';
import { createMemoryStores } from '../../src/adapters/memory';
import { Database } from '../../src/adapters/postgres/database';
import { PgEventStore } from '../../src/adapters/postgres/event-store/pg-event-store';
import { PgRunJournal } from '../../src/adapters/postgres/event-store/pg-run-journal';
import { PgCheckpointStore } from '../../src/adapters/postgres/runs/pg-checkpoint-store';
import {
  ConcurrencyConflict,
  ConflictError,
  InvalidEventPayloadError,
  LeaseFencedError,
  NotFoundError,
  UnknownEventTypeError,
} from '../../src/domain/errors';
import type { NewEvent } from '../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { EventStore, GlobalPosition } from '../../src/ports/event-store';
import type { RunJournal, RunLease } from '../../src/ports/run-journal';
import type { CheckpointStore } from '../../src/ports/run-store';
import { createTestDb } from '../support/test-db';
import { runQueued, sessionCreated, TENANT, testClock, userMessage } from '../support/fixtures';

/**
 * The event store and run journal contract (ADR 0026): what every implementation of the two ports
 * does, run against PostgreSQL and against the in-memory log alike. Optimistic concurrency on the
 * session sequence, tenant isolation, refusals that write nothing, the lease fence and the run row it
 * returns, checkpoints written with their events (and cleared of a provider continuation when the run
 * ends), and the global log in commit order.
 */
interface Stores {
  readonly store: EventStore;
  readonly journal: RunJournal;
  readonly checkpoints: CheckpointStore;
  close(): Promise<void>;
}

async function postgres(): Promise<Stores> {
  const tdb = await createTestDb();
  const db = new Database(tdb.url, 4);
  const store = new PgEventStore(db, testClock);
  return {
    store,
    journal: new PgRunJournal(store.appender),
    checkpoints: new PgCheckpointStore(db),
    close: async () => {
      await db.close();
      await tdb.drop();
    },
  };
}

async function memory(): Promise<Stores> {
  return { ...createMemoryStores(testClock), close: async () => undefined };
}

const claimed = (runId: string, leaseEpoch: number): NewEvent<'run.claimed'> => ({
  type: 'run.claimed',
  runId,
  data: { workerId: `w${leaseEpoch}`, leaseEpoch, attempt: leaseEpoch },
});
const started = (runId: string): NewEvent<'run.started'> => ({
  type: 'run.started',
  runId,
  data: { attempt: 1, deadlineAt: null, traceId: null, spanId: null },
});
const checkpointed = (runId: string, version: number): NewEvent<'run.checkpointed'> => ({
  type: 'run.checkpointed',
  runId,
  actorType: 'worker',
  data: { checkpointVersion: version, step: version },
});
const cancelled = (runId: string): NewEvent<'run.cancelled'> => ({
  type: 'run.cancelled',
  runId,
  data: { reason: 'user request' },
});
const continuation = { provider: 'anthropic', items: [{ type: 'provider_reasoning', text: 'thinking…' }] };

describe.each([
  ['PostgreSQL', postgres],
  ['memory', memory],
])('the event store and run journal contract (%s)', (_name, open) => {
  let s: Stores;
  beforeAll(async () => {
    s = await open();
  });
  afterAll(async () => {
    await s?.close();
  });

  async function newSession(): Promise<string> {
    const id = randomUUID();
    await s.store.append(id, [sessionCreated()], { tenantId: TENANT });
    return id;
  }

  /** A session with a run claimed under epoch 1: the lease that fences the run's writes. */
  async function claimedRun(): Promise<RunLease> {
    const sessionId = await newSession();
    const runId = randomUUID();
    await s.store.append(sessionId, [runQueued(runId), claimed(runId, 1)], { tenantId: TENANT });
    return { sessionId, tenantId: TENANT, runId, leaseEpoch: 1 };
  }

  it('numbers each session’s events gaplessly from 1 and reads them back as appended', async () => {
    const sid = randomUUID();
    const first = await s.store.append(sid, [sessionCreated(), userMessage('one')], { tenantId: TENANT });
    expect(first.events.map((e) => e.sequence)).toEqual([1, 2]);
    expect(first.lastSequence).toBe(2);
    const second = await s.store.append(sid, [userMessage('two')], { tenantId: TENANT });
    expect(second.events.map((e) => e.sequence)).toEqual([3]);
    const ids = [...first.events, ...second.events].map((e) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const read = await s.store.listAfter(sid, 0, LOCAL_PRINCIPAL);
    expect(read.map((e) => [e.id, e.sequence, e.type, e.tenantId, e.sessionId])).toEqual(
      [...first.events, ...second.events].map((e) => [e.id, e.sequence, e.type, TENANT, sid]),
    );
    expect(read[2].data).toEqual(second.events[0].data);
    expect((await s.store.listAfter(sid, 1, LOCAL_PRINCIPAL, 1)).map((e) => e.sequence)).toEqual([2]);
  });

  it('refuses a stale expected sequence with ConcurrencyConflict, writing nothing', async () => {
    const sid = await newSession();
    await s.store.append(sid, [userMessage('a')], { tenantId: TENANT, expectedSequence: 1 });
    await expect(
      s.store.append(sid, [userMessage('b')], { tenantId: TENANT, expectedSequence: 1 }),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect((await s.store.listAfter(sid, 0, LOCAL_PRINCIPAL)).map((e) => e.sequence)).toEqual([1, 2]);
  });

  it('refuses bad input and unknown or foreign sessions, writing nothing', async () => {
    const sid = await newSession();
    await expect(s.store.append(sid, [], { tenantId: TENANT })).rejects.toBeInstanceOf(InvalidEventPayloadError);
    const bad = { type: 'user.message.created', data: { messageId: 'm' } } as unknown as NewEvent;
    await expect(s.store.append(sid, [userMessage('ok'), bad], { tenantId: TENANT })).rejects.toBeInstanceOf(
      InvalidEventPayloadError,
    );
    const unknown = { type: 'no.such.event', data: {} } as unknown as NewEvent;
    await expect(s.store.append(sid, [unknown], { tenantId: TENANT })).rejects.toBeInstanceOf(UnknownEventTypeError);
    await expect(s.store.append(randomUUID(), [userMessage('x')], { tenantId: TENANT })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(s.store.append(sid, [userMessage('x')], { tenantId: 'other' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.store.append(sid, [sessionCreated()], { tenantId: TENANT })).rejects.toBeInstanceOf(ConflictError);
    expect((await s.store.listAfter(sid, 0, LOCAL_PRINCIPAL)).map((e) => e.type)).toEqual(['session.created']);
  });

  it('hides another tenant’s events from session and run reads', async () => {
    const lease = await claimedRun();
    const other = { ...LOCAL_PRINCIPAL, tenantId: 'other' };
    expect(await s.store.listAfter(lease.sessionId, 0, other)).toEqual([]);
    expect(await s.store.listRunEvents(lease.runId, other)).toEqual([]);
    expect((await s.store.listRunEvents(lease.runId, LOCAL_PRINCIPAL)).map((e) => e.type)).toEqual([
      'run.queued',
      'run.claimed',
    ]);
  });

  it('lists one run’s events in order, after a sequence', async () => {
    const lease = await claimedRun();
    await s.store.append(lease.sessionId, [userMessage('not the run’s')], { tenantId: TENANT });
    await s.journal.write(lease, [started(lease.runId)]);
    const all = await s.store.listRunEvents(lease.runId, LOCAL_PRINCIPAL);
    expect(all.map((e) => [e.type, e.sequence])).toEqual([
      ['run.queued', 2],
      ['run.claimed', 3],
      ['run.started', 5],
    ]);
    expect((await s.store.listRunEvents(lease.runId, LOCAL_PRINCIPAL, 3)).map((e) => e.type)).toEqual(['run.started']);
  });

  it('writes under the lease and returns the run row as the write left it', async () => {
    const lease = await claimedRun();
    const r = await s.journal.write(lease, [started(lease.runId)]);
    expect(r.events.map((e) => e.type)).toEqual(['run.started']);
    expect(r.lastSequence).toBe(4);
    expect(r.run).toMatchObject({ id: lease.runId, sessionId: lease.sessionId, status: 'running', leaseEpoch: 1 });
    const conditional = await s.journal.write(lease, [checkpointed(lease.runId, 1)], { expectedSequence: 4 });
    expect(conditional.lastSequence).toBe(5);
    await expect(
      s.journal.write(lease, [checkpointed(lease.runId, 2)], { expectedSequence: 4 }),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
  });

  it('refuses a write whose lease was taken over (LeaseFencedError), writing nothing', async () => {
    const lease = await claimedRun();
    await s.store.append(lease.sessionId, [claimed(lease.runId, 2)], { tenantId: TENANT });
    const err = await s.journal.write(lease, [started(lease.runId)]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LeaseFencedError);
    expect((err as LeaseFencedError).details).toMatchObject({ currentEpoch: 2, writerEpoch: 1 });
    expect((await s.store.listAfter(lease.sessionId, 0, LOCAL_PRINCIPAL)).map((e) => e.type)).toEqual([
      'session.created',
      'run.queued',
      'run.claimed',
      'run.claimed',
    ]);
    await expect(s.journal.write({ ...lease, runId: randomUUID() }, [started(lease.runId)])).rejects.toBeInstanceOf(
      LeaseFencedError,
    );
  });

  it('writes checkpoints with their events, each after the event it follows', async () => {
    const lease = await claimedRun();
    expect(await s.checkpoints.latest(lease.runId)).toBeNull();
    const state = (step: number) => ({ step, phase: 'model_completed', providerContinuation: null });
    const r = await s.journal.write(lease, [checkpointed(lease.runId, 1), checkpointed(lease.runId, 2)], {
      checkpoints: [{ version: 1, state: state(1), throughEvent: 0 }],
    });
    expect(await s.checkpoints.latest(lease.runId)).toMatchObject({
      runId: lease.runId,
      version: 1,
      state: state(1),
      lastEventSequence: r.events[0].sequence,
    });
    const both = await s.journal.write(lease, [checkpointed(lease.runId, 3), checkpointed(lease.runId, 4)], {
      checkpoints: [
        { version: 2, state: state(2), throughEvent: 0 },
        { version: 3, state: state(3), throughEvent: 1 },
      ],
    });
    const latest = await s.checkpoints.latest(lease.runId);
    expect(latest).toMatchObject({ version: 3, state: state(3), lastEventSequence: both.lastSequence });
    expect(latest!.sizeBytes).toBeGreaterThan(0);
    // A version written before refuses the whole write.
    await expect(
      s.journal.write(lease, [checkpointed(lease.runId, 5)], {
        checkpoints: [{ version: 3, state: state(5), throughEvent: 0 }],
      }),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect((await s.store.listAfter(lease.sessionId, both.lastSequence, LOCAL_PRINCIPAL)).length).toBe(0);
  });

  it('clears the provider continuation of the run’s checkpoints when the run ends, unless told none is stored', async () => {
    const withContinuation = async () => {
      const lease = await claimedRun();
      await s.journal.write(lease, [checkpointed(lease.runId, 1)], {
        checkpoints: [
          {
            version: 1,
            state: { step: 1, phase: 'model_completed', providerContinuation: continuation },
            throughEvent: 0,
          },
        ],
      });
      return lease;
    };
    const ended = await withContinuation();
    await s.store.append(ended.sessionId, [cancelled(ended.runId)], { tenantId: TENANT });
    expect((await s.checkpoints.latest(ended.runId))?.state.providerContinuation).toBeNull();
    const told = await withContinuation();
    await s.journal.write(told, [cancelled(told.runId)], { continuationMayBeStored: false });
    expect((await s.checkpoints.latest(told.runId))?.state.providerContinuation).toEqual(continuation);
    // The run's end leaves none in the checkpoints it writes either.
    const terminal = await withContinuation();
    await s.journal.write(terminal, [cancelled(terminal.runId)], {
      checkpoints: [
        { version: 2, state: { step: 1, phase: 'terminal', providerContinuation: continuation }, throughEvent: 0 },
      ],
    });
    expect(await s.checkpoints.latest(terminal.runId)).toMatchObject({
      version: 2,
      state: { providerContinuation: null },
    });
  });

  it('reads the global log in commit order, page by page, from any position', async () => {
    let position: GlobalPosition | null = null;
    const drain = async (pageSize: number) => {
      const seen: number[] = [];
      for (;;) {
        const page = await s.store.readGlobal(position, pageSize);
        if (page.events.length === 0) return seen;
        seen.push(...page.events.map((e) => e.id));
        position = page.position;
      }
    };
    await drain(1000);
    const a = await newSession();
    const b = await newSession();
    const written = [
      ...(await s.store.append(a, [userMessage('a1'), userMessage('a2')], { tenantId: TENANT })).events,
      ...(await s.store.append(b, [userMessage('b1')], { tenantId: TENANT })).events,
      ...(await s.store.append(a, [userMessage('a3')], { tenantId: TENANT })).events,
    ];
    // Transaction ids are cluster-wide on PostgreSQL: an open transaction elsewhere may hold the
    // horizon back for a moment, so read (bounded) until everything written has become safe to read.
    const seen: number[] = [];
    for (const end = Date.now() + 20_000; Date.now() < end && seen.length < written.length + 2;)
      seen.push(...(await drain(2)));
    expect(seen.filter((id) => written.some((e) => e.id === id))).toEqual(written.map((e) => e.id));
    expect(await s.store.readGlobal(position, 10)).toEqual({ events: [], position });
  });
});
