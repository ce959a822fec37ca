import { randomUUID } from 'node:crypto';
import { Database } from '../../src/adapters/postgres/database';
import { GENERATION_SQL } from '../../src/adapters/postgres/event-store/append-statement';
import { PgEventStore } from '../../src/adapters/postgres/event-store/pg-event-store';
import {
  rebuildProjections,
  type RebuildProgress,
  type RebuildReport,
} from '../../src/adapters/postgres/projection-rebuild';
import { ValidationError } from '../../src/domain/errors';
import type { NewEvent } from '../../src/domain/events/payloads';
import { PROJECTIONS } from '../../src/domain/projections';
import { DEFAULT_LIMITS } from '../../src/domain/run/limits';
import { eventsOrThrow, evolveAll } from '../../src/domain/deciders/decider';
import { memoryDecider, type MemoryCommand, type MemoryState } from '../../src/domain/deciders/memory';
import { sessionDecider } from '../../src/domain/deciders/session';
import { createMemoryStream, memoryStreamIdOf } from '../../src/domain/memory/memory-stream';
import { createTestDb, type TestDb } from '../support/test-db';
import { TENANT, testClock } from '../support/fixtures';

let tdb: TestDb;
let db: Database;
let store: PgEventStore;

/** A tiny deterministic PRNG so the generated history is the same on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface SessionHistory {
  readonly sessionId: string;
  readonly runIds: string[];
}

/**
 * Appends one session's realistic history the way the runtime does, in several appends: the user
 * message and the queued run, the claim, then each step (model call, tool call with authorization,
 * checkpoint), sometimes an approval round-trip or a failed model attempt, and a terminal outcome.
 */
async function appendSessionHistory(rand: () => number, n: number): Promise<SessionHistory> {
  const sessionId = randomUUID();
  const runIds: string[] = [];
  const append = (events: NewEvent[]) => store.append(sessionId, events, { tenantId: TENANT });
  await append([
    {
      type: 'session.created',
      actorType: 'user',
      actorId: 'local-user',
      data: {
        agentId: 'general',
        agentVersion: 1,
        principalId: 'local-user',
        title: `Session ${n}`,
        metadata: { source: 'test', n },
      },
    },
  ]);
  const runCount = 1 + Math.floor(rand() * 3);
  for (let r = 0; r < runCount; r++) {
    const runId = randomUUID();
    runIds.push(runId);
    const messageId = randomUUID();
    const traceId = `trace-${n}-${r}`;
    await append([
      {
        type: 'user.message.created',
        actorType: 'user',
        actorId: 'local-user',
        data: { messageId, content: [{ type: 'text', text: `What is ${n} + ${r}?` }] },
      },
      {
        type: 'run.queued',
        runId,
        data: {
          agentId: 'general',
          agentVersion: 1,
          principalId: 'local-user',
          modelPolicy: 'demo',
          userMessageId: messageId,
          limits: DEFAULT_LIMITS,
          priority: 100,
          idempotencyKey: rand() < 0.5 ? `submit-${runId}` : null,
          requestHash: `hash-${n}-${r}`,
          scopes: ['runs.read', 'tools.use'],
        },
      },
    ]);
    let epoch = 1;
    await append([
      {
        type: 'run.claimed',
        runId,
        actorType: 'worker',
        actorId: 'worker-1',
        data: { workerId: 'worker-1', leaseEpoch: epoch, attempt: 1 },
      },
      {
        type: 'run.started',
        runId,
        actorType: 'worker',
        traceId,
        data: { attempt: 1, deadlineAt: new Date(Date.now() + 300_000).toISOString(), traceId },
      },
    ]);
    const steps = 1 + Math.floor(rand() * 3);
    for (let step = 1; step <= steps; step++) {
      const modelCallId = randomUUID();
      const stepEvents: NewEvent[] = [];
      if (rand() < 0.15) {
        const failedCall = randomUUID();
        stepEvents.push(
          {
            type: 'model.request.started',
            runId,
            traceId,
            data: {
              modelCallId: failedCall,
              step,
              attempt: 1,
              provider: 'fake',
              model: 'fake-1',
              prefixHash: `p${step}`,
              profileName: null,
              profileVersion: null,
              registryVersion: null,
              context: null,
            },
          },
          {
            type: 'model.request.failed',
            runId,
            traceId,
            data: {
              modelCallId: failedCall,
              step,
              attempt: 1,
              errorCode: 'rate_limited',
              message: 'slow down',
              retryable: true,
              latencyMs: 40,
            },
          },
        );
      }
      const invocationId = randomUUID();
      const callId = `call_${n}_${r}_${step}`;
      stepEvents.push(
        {
          type: 'model.request.started',
          runId,
          traceId,
          data: {
            modelCallId,
            step,
            attempt: 1,
            provider: 'acme',
            model: 'acme-1',
            prefixHash: `p${step}`,
            profileName: 'acme',
            profileVersion: 1 + (step % 3),
            registryVersion: `r1-${String(r).padStart(12, '0')}`,
            context: null,
          },
        },
        {
          type: 'model.response.completed',
          runId,
          traceId,
          data: {
            modelCallId,
            step,
            attempt: 1,
            stopReason: 'tool_use',
            usage: {
              uncachedInputTokens: 120 + step,
              cachedInputTokens: 64,
              cacheWriteTokens: 0,
              outputTokens: 30,
              reasoningTokens: 5,
            },
            cost: '0.000415',
            costSource: 'catalog_price',
            toolCalls: [{ callId, name: 'calculator' }],
            textLength: 0,
            latencyMs: 210,
          },
        },
        {
          type: 'tool.call.proposed',
          runId,
          data: {
            invocationId,
            step,
            callId,
            toolName: 'calculator',
            toolVersion: '1',
            arguments: { expression: `${n} + ${r}` },
            argumentsHash: `args-${n}-${r}-${step}`,
            idempotencyKey: `${runId}:${step}:${callId}`,
          },
        },
      );
      await append(stepEvents);
      if (rand() < 0.2) {
        // A risky call waits for a human: the run parks, is approved, and is picked up again.
        const approvalId = randomUUID();
        await append([
          {
            type: 'approval.requested',
            runId,
            data: {
              approvalId,
              actionKind: 'tool_call',
              principalId: 'local-user',
              invocationId,
              toolName: 'calculator',
              arguments: { expression: `${n} + ${r}` },
              actionSummary: 'evaluate an expression',
              policyReason: 'approval required in test policy',
              risk: 'low',
              expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
              policyVersion: 'v1',
            },
          },
          { type: 'run.waiting_for_approval', runId, data: { approvalId } },
        ]);
        epoch++;
        await append([
          {
            type: 'approval.resolved',
            runId,
            actorType: 'user',
            data: { approvalId, decision: 'approved', resolvedBy: 'local-user', reason: null },
          },
          { type: 'run.resumed', runId, data: { reason: 'approval_granted' } },
          {
            type: 'run.claimed',
            runId,
            actorType: 'worker',
            data: { workerId: 'worker-2', leaseEpoch: epoch, attempt: 1 },
          },
        ]);
      }
      const toolFails = rand() < 0.1;
      await append([
        {
          type: 'tool.call.authorized',
          runId,
          data: { invocationId, decision: 'allow', reasonCode: 'low_risk', policyVersion: 'v1' },
        },
        { type: 'tool.call.started', runId, data: { invocationId } },
        toolFails
          ? {
              type: 'tool.call.failed',
              runId,
              data: {
                invocationId,
                errorCode: 'bad_expression',
                message: 'cannot parse',
                retryable: false,
                latencyMs: 3,
              },
            }
          : {
              type: 'tool.call.completed',
              runId,
              data: { invocationId, result: { value: n + r }, truncated: false, latencyMs: 2, trust: 'internal_tool' },
            },
        { type: 'run.checkpointed', runId, data: { checkpointVersion: step, step } },
      ]);
    }
    if (rand() < 0.2) {
      await append([
        {
          type: 'run.failed',
          runId,
          data: {
            reason: 'model_permanent_error',
            message: 'provider refused the request',
            errorCode: 'invalid_request',
          },
        },
      ]);
    } else {
      const answerId = randomUUID();
      await append([
        { type: 'assistant.message.completed', runId, data: { messageId: answerId, text: `The answer is ${n + r}.` } },
        { type: 'run.completed', runId, data: { messageId: answerId } },
      ]);
    }
  }
  return { sessionId, runIds };
}

/**
 * One owner's memory stream (ADR 0035), decided by the memory decider as the store decides it:
 * records, a reinforcement, a supersession, a close conflict, a user's edit, an expiry, a deletion;
 * and a retrieval trace in one of the owner's conversation sessions.
 */
async function appendMemoryHistory(n: number, conversation: SessionHistory): Promise<void> {
  const owner = `owner-${n}`;
  const streamId = memoryStreamIdOf(TENANT, owner);
  await store.append(
    streamId,
    eventsOrThrow(sessionDecider.decide(createMemoryStream(owner), sessionDecider.initialState())),
    {
      tenantId: TENANT,
    },
  );
  let state: MemoryState = memoryDecider.initialState();
  const ids: string[] = [];
  const decide = async (cmd: MemoryCommand) => {
    const events = eventsOrThrow(memoryDecider.decide(cmd, state));
    state = evolveAll(memoryDecider, state, events);
    if (events.length > 0) await store.append(streamId, events, { tenantId: TENANT });
  };
  const remember = (
    statement: string,
    trust: 'user' | 'inferred' | 'external' = 'user',
    expiresAt: string | null = null,
  ) => {
    const memoryId = randomUUID();
    ids.push(memoryId);
    return decide({
      kind: 'RecordMemory',
      actor: { actorType: 'worker' },
      memoryId,
      ownerPrincipalId: owner,
      candidate: {
        statement,
        scope: 'principal',
        agentId: null,
        sensitivity: 'personal',
        trust,
        attribution: trust === 'external' ? 'tool:mcp.web.fetch' : null,
        sourceEvents: [{ id: n + 1, sessionId: conversation.sessionId, sequence: n + 1 }],
        sourceSessionId: conversation.sessionId,
        sourceRunId: conversation.runIds[0],
        invocationId: null,
        expiresAt,
      },
      policy: { allowSensitive: false, allowTenantScope: false },
      nowIso: testClock.nowIso(),
    });
  };
  const user = { actorType: 'user' as const, actorId: owner };
  await remember(`my team is called Blue Falcon ${n}`);
  await remember(`my team is called Blue Falcon ${n}`);
  await remember(`my team is called Red Fox ${n}`);
  await remember('my favourite colour is green', 'inferred');
  await remember('my favourite colour is blue', 'inferred');
  await remember('my favourite colour is teal', 'external');
  await remember(`my dog is called Rex ${n}`, 'user', '2020-01-01T00:00:00.000Z');
  await decide({
    kind: 'EditMemory',
    actor: user,
    memoryId: ids[4],
    byPrincipalId: owner,
    changes: { status: 'active' },
    policy: { allowSensitive: false, allowTenantScope: false },
  });
  await decide({ kind: 'ExpireMemory', actor: { actorType: 'system' }, memoryId: ids[6] });
  await decide({ kind: 'DeleteMemory', actor: user, memoryId: ids[2], byPrincipalId: owner });
  const trace = memoryDecider.decide(
    {
      kind: 'RecordRetrieval',
      actor: { actorType: 'worker' },
      runId: conversation.runIds[0],
      retrieval: {
        retrievalId: randomUUID(),
        purpose: 'snapshot',
        query: 'what is my team called?',
        invocationId: null,
        method: 'fts+trgm',
        items: ids.slice(0, 2).map((memoryId, i) => ({ memoryId, score: 0.5 - i / 10, rank: i + 1 })),
        blocked: [],
        rendered: '[memory] what you remember',
      },
    },
    memoryDecider.initialState(),
  );
  await store.append(conversation.sessionId, eventsOrThrow(trace), { tenantId: TENANT });
}

async function eventCount(): Promise<number> {
  return Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0].n);
}

function projection(report: RebuildReport, name: string) {
  const p = report.projections.find((x) => x.name === name);
  if (!p) throw new Error(`projection ${name} missing from the report`);
  return p;
}

function expectClean(report: RebuildReport): void {
  for (const p of report.projections) {
    expect({ name: p.name, differingRows: p.differingRows, differences: p.differences }).toEqual({
      name: p.name,
      differingRows: 0,
      differences: [],
    });
  }
}

async function shadowTablesLeft(): Promise<string[]> {
  const r = await db.query<{ relname: string }>(
    `SELECT relname FROM pg_class WHERE relname LIKE '%\\_\\_rebuild' OR relname = 'projection_rebuild__progress'`,
  );
  return r.rows.map((x) => x.relname);
}

/** The read-model generation, as the append's check and the state reads read it. */
async function readModelGeneration(): Promise<string> {
  const r = await db.query<{ generation: string }>(`SELECT ${GENERATION_SQL}::text AS generation`);
  return r.rows[0].generation;
}

/** A run whose session has no active run, so rewriting its status cannot trip the one-active-run index. */
async function completedRun(offset = 0): Promise<string> {
  const r = await db.query<{ id: string }>(
    `SELECT id FROM runs WHERE status = 'completed' ORDER BY id OFFSET $1 LIMIT 1`,
    [offset],
  );
  return r.rows[0].id;
}

const histories: SessionHistory[] = [];

beforeAll(async () => {
  tdb = await createTestDb();
  db = new Database(tdb.url, 20);
  store = new PgEventStore(db, testClock);
  const rand = prng(42);
  const sessions = 160;
  // Eight writers at once, as a busy server would; each session's own history stays sequential.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let n = next++; n < sessions; n = next++) histories.push(await appendSessionHistory(rand, n));
    }),
  );
  for (let n = 0; n < 12; n++) await appendMemoryHistory(n, histories[n]);
}, 120_000);

afterAll(async () => {
  await db.close();
  await tdb.drop();
});

describe('rebuildProjections', () => {
  it('verifies a log of a few thousand events written through the event store with zero differences', async () => {
    const events = await eventCount();
    expect(events).toBeGreaterThan(2000);
    const progress: RebuildProgress[] = [];
    const report = await rebuildProjections(db, { verify: true, batchSize: 500, onProgress: (p) => progress.push(p) });
    expectClean(report);
    expect(report.swapped).toBe(false);
    expect(report.eventsReplayed).toBe(events);
    expect(report.projections.map((p) => p.name)).toEqual(PROJECTIONS.map((p) => p.name));
    for (const p of PROJECTIONS) {
      const live = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${p.table}`)).rows[0].n);
      expect({ name: p.name, rows: projection(report, p.name).rows }).toEqual({ name: p.name, rows: live });
    }
    expect(projection(report, 'approvals').rows).toBeGreaterThan(0);
    expect(projection(report, 'idempotency_keys').rows).toBeGreaterThan(0);
    expect(projection(report, 'memory_records').rows).toBe(12 * 6);
    expect(projection(report, 'memory_retrievals').rows).toBe(12);
    const phases = progress.map((p) => p.phase);
    expect(phases).toContain('replay');
    expect(phases[phases.length - 1]).toBe('done');
    expect(progress.find((p) => p.phase === 'replay')!.eventsTotal).toBe(events);
    expect(await shadowTablesLeft()).toEqual([]);
    expect((await db.query('SELECT * FROM projection_watermarks')).rowCount).toBe(0);
  });

  it('reports a corrupted run row by its key and the column status, leaving the live table untouched', async () => {
    const runId = await completedRun();
    await db.query(`UPDATE runs SET status = 'queued' WHERE id = $1`, [runId]);
    const generation = await readModelGeneration();
    const report = await rebuildProjections(db, { verify: true });
    // Verify rewrites nothing, so rows cached by appenders stay good.
    expect(await readModelGeneration()).toBe(generation);
    const runs = projection(report, 'runs');
    expect(runs.differingRows).toBe(1);
    expect(runs.differences).toEqual([
      { key: runId, column: 'status', live: 'queued', rebuilt: 'completed', kind: 'different' },
    ]);
    for (const p of report.projections.filter((x) => x.name !== 'runs')) expect(p.differingRows).toBe(0);
    expect((await db.query('SELECT status FROM runs WHERE id = $1', [runId])).rows[0]).toEqual({ status: 'queued' });
  });

  it('repairs the corrupted row, records watermarks, and a following verify passes', async () => {
    const corrupted = (await db.query<{ id: string }>(`SELECT id FROM runs WHERE status = 'queued'`)).rows.map(
      (r) => r.id,
    );
    expect(corrupted).toHaveLength(1);
    const generation = await readModelGeneration();
    const repair = await rebuildProjections(db, { verify: false });
    expect(repair.swapped).toBe(true);
    // A repair starts a new read-model generation (ADR 0026): rows read before it are refused.
    expect(await readModelGeneration()).not.toBe(generation);
    expect(projection(repair, 'runs').differences).toEqual([
      { key: corrupted[0], column: 'status', live: 'queued', rebuilt: 'completed', kind: 'different' },
    ]);
    expect((await db.query('SELECT status FROM runs WHERE id = $1', [corrupted[0]])).rows[0]).toEqual({
      status: 'completed',
    });
    expectClean(await rebuildProjections(db, { verify: true }));

    const newest = (
      await db.query<{ id: string; transaction_id: string }>(
        'SELECT e.id, e.transaction_id::text FROM events e ORDER BY e.transaction_id DESC, e.id DESC LIMIT 1',
      )
    ).rows[0];
    const marks = await db.query<{
      name: string;
      version: number;
      position: string;
      transaction_id: string;
      rebuilt: boolean;
    }>(
      'SELECT name, version, position, transaction_id::text, rebuilt_at IS NOT NULL AS rebuilt FROM projection_watermarks ORDER BY name',
    );
    expect(marks.rows).toEqual(
      PROJECTIONS.map((p) => ({
        name: p.name,
        version: p.version,
        position: newest.id,
        transaction_id: newest.transaction_id,
        rebuilt: true,
      })).sort((a, b) => a.name.localeCompare(b.name)),
    );
    expect(await shadowTablesLeft()).toEqual([]);
  });

  it('reports a row deleted from the live table as missing and restores it with the same values', async () => {
    const before = (await db.query(`SELECT * FROM tool_invocations ORDER BY id LIMIT 1`)).rows[0] as Record<
      string,
      unknown
    >;
    const invocationId = before.id as string;
    await db.query('DELETE FROM tool_invocations WHERE id = $1', [invocationId]);
    // And a row no event produced: it must go.
    const stray = randomUUID();
    await db.query(
      `INSERT INTO model_calls (id, run_id, session_id, tenant_id, step_number, attempt_number, provider, model, status, started_at)
       VALUES ($1, $2, $3, 'local', 1, 1, 'fake', 'fake-1', 'started', now())`,
      [stray, randomUUID(), histories[0].sessionId],
    );

    const verify = await rebuildProjections(db, { verify: true });
    const [missing] = projection(verify, 'tool_invocations').differences;
    expect(missing).toMatchObject({ key: invocationId, column: null, live: null, kind: 'missing_in_live' });
    expect(missing.rebuilt).toMatchObject({ id: invocationId, tool_name: 'calculator', status: before.status });
    expect(projection(verify, 'model_calls').differences).toEqual([
      expect.objectContaining({ key: stray, column: null, rebuilt: null, kind: 'missing_in_rebuild' }),
    ]);

    await rebuildProjections(db, { verify: false });
    expect((await db.query('SELECT * FROM tool_invocations WHERE id = $1', [invocationId])).rows[0]).toEqual(before);
    expect((await db.query('SELECT 1 FROM model_calls WHERE id = $1', [stray])).rowCount).toBe(0);
    expectClean(await rebuildProjections(db, { verify: true }));
  });

  it('keeps runs.lease_expires_at, an operational column, through a repair of that row', async () => {
    const runId = await completedRun(1);
    const untouched = await completedRun(2);
    const lease = '2031-05-06T07:08:09.123Z';
    await db.query(`UPDATE runs SET lease_expires_at = $2, status = 'queued', step_count = 99 WHERE id = $1`, [
      runId,
      lease,
    ]);
    await db.query(`UPDATE runs SET lease_expires_at = $2 WHERE id = $1`, [untouched, lease]);

    const verify = await rebuildProjections(db, { verify: true });
    // The operational column is not compared: only the two projection columns differ.
    expect(
      projection(verify, 'runs')
        .differences.map((d) => d.column)
        .sort(),
    ).toEqual(['status', 'step_count']);

    await rebuildProjections(db, { verify: false });
    const rows = await db.query<{ id: string; status: string; lease: Date }>(
      'SELECT id, status, lease_expires_at AS lease FROM runs WHERE id = ANY($1::uuid[]) ORDER BY id',
      [[runId, untouched]],
    );
    for (const r of rows.rows)
      expect({ status: r.status, lease: r.lease.toISOString() }).toEqual({ status: 'completed', lease });
    expectClean(await rebuildProjections(db, { verify: true }));
  });

  it('repairs two runs of one session that swap which one is active, keeping their leases', async () => {
    const sessionId = randomUUID();
    const [first, second] = [randomUUID(), randomUUID()];
    const queued = (runId: string): NewEvent => ({
      type: 'run.queued',
      runId,
      data: {
        agentId: 'general',
        agentVersion: 1,
        principalId: 'local-user',
        modelPolicy: 'demo',
        userMessageId: null,
        limits: DEFAULT_LIMITS,
        priority: 100,
        idempotencyKey: null,
        requestHash: null,
        scopes: ['runs.read', 'tools.use'],
      },
    });
    await store.append(
      sessionId,
      [
        {
          type: 'session.created',
          data: { agentId: 'general', agentVersion: 1, principalId: 'local-user', title: null, metadata: {} },
        },
      ],
      { tenantId: TENANT },
    );
    await store.append(
      sessionId,
      [queued(first), { type: 'run.cancelled', runId: first, data: { reason: 'user' } }, queued(second)],
      { tenantId: TENANT },
    );
    // Live now claims the first run is the active one and the second is over: the repair has to
    // move "active" from one row to the other, which the one-active-run index checks row by row.
    const lease = '2030-01-02T03:04:05.678Z';
    await db.query(`UPDATE runs SET status = 'cancelled', lease_expires_at = $2 WHERE id = $1`, [second, lease]);
    await db.query(`UPDATE runs SET status = 'running', lease_expires_at = $2 WHERE id = $1`, [first, lease]);

    const report = await rebuildProjections(db, { verify: false, projections: ['runs'] });
    expect(projection(report, 'runs').differingRows).toBe(2);
    const rows = await db.query<{ id: string; status: string; lease: Date }>(
      'SELECT id, status, lease_expires_at AS lease FROM runs WHERE session_id = $1',
      [sessionId],
    );
    expect(Object.fromEntries(rows.rows.map((r) => [r.id, [r.status, r.lease.toISOString()]]))).toEqual({
      [first]: ['cancelled', lease],
      [second]: ['queued', lease],
    });
    expectClean(await rebuildProjections(db, { verify: true }));
  });

  it('rebuilds only runs when asked for --projection runs', async () => {
    const runId = await completedRun(3);
    const sessionId = histories[1].sessionId;
    await db.query(`UPDATE runs SET final_text = 'tampered' WHERE id = $1`, [runId]);
    await db.query(`UPDATE sessions SET message_count = 1000 WHERE id = $1`, [sessionId]);
    const marksBefore = await db.query<{ name: string; rebuilt_at: Date }>(
      'SELECT name, rebuilt_at FROM projection_watermarks ORDER BY name',
    );

    const report = await rebuildProjections(db, { verify: false, projections: ['runs'] });
    expect(report.projections.map((p) => p.name)).toEqual(['runs']);
    expect(projection(report, 'runs').differences).toEqual([
      expect.objectContaining({ key: runId, column: 'final_text', live: 'tampered' }),
    ]);
    expect((await db.query('SELECT final_text FROM runs WHERE id = $1', [runId])).rows[0].final_text).not.toBe(
      'tampered',
    );
    expect((await db.query('SELECT message_count FROM sessions WHERE id = $1', [sessionId])).rows[0]).toEqual({
      message_count: 1000,
    });
    const marksAfter = await db.query<{ name: string; rebuilt_at: Date }>(
      'SELECT name, rebuilt_at FROM projection_watermarks ORDER BY name',
    );
    for (const m of marksAfter.rows) {
      const before = marksBefore.rows.find((b) => b.name === m.name)!.rebuilt_at.getTime();
      if (m.name === 'runs') expect(m.rebuilt_at.getTime()).toBeGreaterThan(before);
      else expect(m.rebuilt_at.getTime()).toBe(before);
    }

    const sessionsOnly = await rebuildProjections(db, { verify: true, projections: ['sessions'] });
    expect(projection(sessionsOnly, 'sessions').differences).toEqual([
      { key: sessionId, column: 'message_count', live: 1000, rebuilt: expect.any(Number), kind: 'different' },
    ]);
    await rebuildProjections(db, { verify: false, projections: ['sessions'] });
    expectClean(await rebuildProjections(db, { verify: true }));
  });

  it('refuses an unknown projection name and lists the valid ones', async () => {
    const err = await rebuildProjections(db, { verify: true, projections: ['runs', 'runz'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toContain('"runz"');
    expect((err as ValidationError).message).toContain(PROJECTIONS.map((p) => p.name).join(', '));
    expect((err as ValidationError).details).toEqual({ unknown: ['runz'], valid: PROJECTIONS.map((p) => p.name) });
    expect(await shadowTablesLeft()).toEqual([]);
  });

  it('drops a shadow table left over by a crashed rebuild before starting', async () => {
    await db.query('CREATE UNLOGGED TABLE runs__rebuild (junk int)');
    await db.query('CREATE UNLOGGED TABLE projection_rebuild__progress (junk int)');
    expectClean(await rebuildProjections(db, { verify: true, projections: ['runs'] }));
    expect(await shadowTablesLeft()).toEqual([]);
  });

  it('catches up with appends made while it replays, both in verify and in repair mode', async () => {
    // The sessions the replay reads first: by the third page they are behind its cursor.
    const earliest = (await db.query<{ id: string }>('SELECT id FROM sessions ORDER BY id LIMIT 3')).rows.map(
      (r) => r.id,
    );
    for (const verify of [true, false]) {
      const rand = prng(verify ? 7 : 8);
      const writes: Promise<unknown>[] = [];
      const phases: string[] = [];
      const before = await eventCount();
      const report = await rebuildProjections(db, {
        verify,
        batchSize: 100,
        onProgress: (p) => {
          phases.push(p.phase);
          // Early in the replay, and again while it compares just before locking, new sessions
          // appear and sessions the replay has already read move on.
          if (
            (p.phase === 'replay' && phases.filter((x) => x === 'replay').length === 3) ||
            (p.phase === 'compare' && !phases.slice(0, -1).includes('compare'))
          ) {
            writes.push(appendSessionHistory(rand, 1000 + phases.length));
            for (const sessionId of earliest) {
              const more: NewEvent = {
                type: 'user.message.created',
                actorType: 'user',
                data: { messageId: randomUUID(), content: [{ type: 'text', text: 'one more thing' }] },
              };
              writes.push(store.append(sessionId, [more], { tenantId: TENANT }));
            }
          }
        },
      });
      await Promise.all(writes);
      expectClean(report);
      expect(phases).toContain('catch-up');
      expect(report.eventsReplayed).toBeGreaterThan(before);
      expectClean(await rebuildProjections(db, { verify: true }));
    }
  });

  it('refuses to run while another rebuild holds the lock', async () => {
    let second: Promise<unknown> | undefined;
    const first = rebuildProjections(db, {
      verify: true,
      // Started once the first holds its lock and has built its shadow tables.
      onProgress: (p) => {
        if (p.phase === 'prepare') second = rebuildProjections(db, { verify: true }).catch((e: unknown) => e);
      },
    });
    expectClean(await first);
    expect(await second).toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('another projection rebuild is running'),
    });
    expect(await shadowTablesLeft()).toEqual([]);
  });
});
