import { randomUUID } from 'node:crypto';
import { Database } from '../../src/adapters/postgres/database';
import { PgEventStore } from '../../src/adapters/postgres/event-store/pg-event-store';
import { PgRunJournal } from '../../src/adapters/postgres/event-store/pg-run-journal';
import type { RunWriteOptions } from '../../src/ports/run-journal';
import { ConcurrencyConflict } from '../../src/domain/errors';
import type { NewEvent } from '../../src/domain/events/payloads';
import { createTestDb, type TestDb } from '../support/test-db';
import { runQueued, sessionCreated, TENANT, testClock } from '../support/fixtures';

/**
 * The append that ends a run clears the provider-opaque continuation (plan §10.6) from the run's
 * stored checkpoints in the same statement: whoever writes the ending (the run loop, a cancel of a
 * waiting run, the reaper), a finished run is never observable with one, and a refused append
 * clears nothing.
 */
let tdb: TestDb;
let db: Database;
let store: PgEventStore;
let journal: PgRunJournal;

beforeAll(async () => {
  tdb = await createTestDb();
  db = new Database(tdb.url, 4);
  store = new PgEventStore(db, testClock);
  journal = new PgRunJournal(store.appender);
});

/** A run journal write of a run still queued (lease epoch 0): its checkpoints with it. */
function write(sessionId: string, runId: string, events: NewEvent[], options: RunWriteOptions) {
  return journal.write({ sessionId, tenantId: TENANT, runId, leaseEpoch: 0 }, events, options);
}
afterAll(async () => {
  await db?.close();
  await tdb?.drop();
});

const continuation = {
  provider: 'anthropic',
  items: [{ type: 'provider_reasoning', provider: 'anthropic', text: 'thinking…', signature: 'sig' }],
};

const checkpointed = (runId: string, version: number, step = version): NewEvent => ({
  type: 'run.checkpointed',
  runId,
  actorType: 'worker',
  data: { checkpointVersion: version, step },
});

/** A session with one run that wrote a checkpoint holding a continuation, and one without. */
async function runWithContinuation(): Promise<{ sessionId: string; runId: string; lastSequence: number }> {
  const sessionId = randomUUID();
  const runId = randomUUID();
  await store.append(sessionId, [sessionCreated(), runQueued(runId)], { tenantId: TENANT });
  await write(sessionId, runId, [checkpointed(runId, 1)], {
    checkpoints: [
      { version: 1, state: { step: 1, phase: 'model_completed', providerContinuation: continuation }, throughEvent: 0 },
    ],
  });
  const r = await write(sessionId, runId, [checkpointed(runId, 2)], {
    checkpoints: [
      { version: 2, state: { step: 2, phase: 'tools_completed', providerContinuation: null }, throughEvent: 0 },
    ],
  });
  return { sessionId, runId, lastSequence: r.lastSequence };
}

async function continuations(runId: string): Promise<unknown[]> {
  const res = await db.query<{ c: unknown }>(
    `SELECT state->'providerContinuation' AS c FROM checkpoints WHERE run_id = $1 ORDER BY version`,
    [runId],
  );
  return res.rows.map((r) => r.c);
}

const cancelled = (runId: string): NewEvent => ({ type: 'run.cancelled', runId, data: { reason: 'user request' } });

describe('a run-ending append', () => {
  it('clears the continuation of every earlier checkpoint, in the same statement', async () => {
    const { sessionId, runId } = await runWithContinuation();
    expect(await continuations(runId)).toEqual([continuation, null]);
    await store.append(sessionId, [cancelled(runId)], { tenantId: TENANT });
    expect(await continuations(runId)).toEqual([null, null]);
    // Nothing else in the checkpoint changed.
    const states = await db.query<{ state: Record<string, unknown> }>(
      `SELECT state FROM checkpoints WHERE run_id = $1 ORDER BY version`,
      [runId],
    );
    expect(states.rows[0].state).toEqual({ step: 1, phase: 'model_completed', providerContinuation: null });
  });

  it('clears them with the terminal checkpoint it writes, and in a batch too large for a named statement', async () => {
    const { sessionId, runId } = await runWithContinuation();
    const filler = Array.from({ length: 5 }, (_, i) => checkpointed(runId, 3, 3 + i));
    await write(sessionId, runId, [...filler, ...filler, cancelled(runId)], {
      checkpoints: [
        {
          version: 3,
          state: { step: 3, phase: 'model_completed', providerContinuation: continuation },
          throughEvent: 4,
        },
        { version: 4, state: { step: 3, phase: 'terminal', providerContinuation: null }, throughEvent: 10 },
      ],
    });
    expect(await continuations(runId)).toEqual([null, null, null, null]);
  });

  it('writes a queued (interim) checkpoint after its own event, and without a continuation when the batch ends the run', async () => {
    const { sessionId, runId, lastSequence } = await runWithContinuation();
    // An interim checkpoint after the batch's first event, then the final one after its last.
    await write(sessionId, runId, [checkpointed(runId, 3), checkpointed(runId, 4)], {
      checkpoints: [
        {
          version: 3,
          state: { step: 3, phase: 'model_completed', providerContinuation: continuation },
          throughEvent: 0,
        },
        { version: 4, state: { step: 4, phase: 'tools_completed', providerContinuation: null }, throughEvent: 1 },
      ],
    });
    const rows = async () =>
      (
        await db.query<{ version: number; seq: string; c: unknown }>(
          `SELECT version, last_event_sequence AS seq, state->'providerContinuation' AS c FROM checkpoints WHERE run_id = $1 ORDER BY version`,
          [runId],
        )
      ).rows.map((r) => [r.version, Number(r.seq), r.c]);
    expect((await rows()).slice(2)).toEqual([
      [3, lastSequence + 1, continuation],
      [4, lastSequence + 2, null],
    ]);
    // Queued with the run's end, an interim checkpoint keeps no continuation either.
    await write(sessionId, runId, [checkpointed(runId, 5), cancelled(runId)], {
      continuationMayBeStored: false,
      checkpoints: [
        {
          version: 5,
          state: { step: 5, phase: 'model_completed', providerContinuation: continuation },
          throughEvent: 0,
        },
        { version: 6, state: { step: 5, phase: 'terminal', providerContinuation: null }, throughEvent: 1 },
      ],
    });
    expect((await rows()).slice(4)).toEqual([
      [5, lastSequence + 3, null],
      [6, lastSequence + 4, null],
    ]);
  });

  it('clears nothing when it is refused', async () => {
    const { sessionId, runId, lastSequence } = await runWithContinuation();
    await expect(
      store.append(sessionId, [cancelled(runId)], { tenantId: TENANT, expectedSequence: lastSequence - 1 }),
    ).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect(await continuations(runId)).toEqual([continuation, null]);
  });

  it("leaves other runs' checkpoints and non-ending appends alone, and skips the clearing when told none is stored", async () => {
    const a = await runWithContinuation();
    const b = await runWithContinuation();
    await store.append(a.sessionId, [checkpointed(a.runId, 3)], { tenantId: TENANT });
    expect(await continuations(a.runId)).toEqual([continuation, null]);
    await write(a.sessionId, a.runId, [cancelled(a.runId)], { continuationMayBeStored: false });
    expect(await continuations(a.runId)).toEqual([continuation, null]);
    expect(await continuations(b.runId)).toEqual([continuation, null]);
  });
});
