import { isSpanContextValid, trace } from '@opentelemetry/api';
import type { Clock } from '../../../ports/clock';
import type { AppendOptions, AppendResult, EventStore, GlobalPosition } from '../../../ports/event-store';
import type { NewEvent, StoredEvent } from '../../../domain/events/payloads';
import type { Principal } from '../../../domain/principal';
import { EVENT_CATALOG } from '../../../domain/events/catalog';
import { PROJECTIONS, type Projection, type Row } from '../../../domain/projections';
import { runProjection } from '../../../domain/projections/run-projection';
import { RUN_ENDING_EVENTS } from '../../../domain/run/status';
import { sessionProjection } from '../../../domain/projections/session-projection';
import {
  ConcurrencyConflict,
  ConflictError,
  InvalidEventPayloadError,
  LeaseFencedError,
  NotFoundError,
} from '../../../domain/errors';
import { escapeLiteral } from 'pg';
import { pgError, type Database, type Queryable } from '../database';
import { decodeEvent, encodeEvent, EVENT_COLUMNS, lastSequenceSql, type EventRow } from '../event-codec';
import { jsonbShape } from '../jsonb-shape';
import { toRunRecord } from '../runs/run-row';
import {
  buildAppendStatement,
  GENERATION_READ_SQL,
  GENERATION_SQL,
  type ColumnTypes,
  type ProjectionWrite,
} from './append-statement';
import { BatchedNotifier, type Notification } from '../notify/batched-notifier';
import { SessionStateCache } from './session-state-cache';

/** Optimistic tries before the append falls back to locking the session row. */
const OPTIMISTIC_ATTEMPTS = 3;
const MAX_ATTEMPTS = 10;
const GENERATION = '__generation';
const LAST_SEQUENCE = '__last_sequence';
export { GENERATION_READ_SQL, GENERATION_SQL };

/**
 * Rows a caller already read inside its transaction (`to_jsonb(row)` of each projection table, and
 * the read-model generation), so an in-transaction append can skip its own read round trip. Used
 * only when they cover every row the batch touches; the sequence gate validates them like any read.
 */
export interface PrereadState {
  readonly generation: string;
  /** The session's last sequence as of the same read. */
  readonly lastSequence: number;
  /** Rows by projection table name. */
  readonly rows: ReadonlyMap<string, readonly Row[]>;
}

/** A client-supplied idempotency key collided: the caller looks up the original. */
export class IdempotencyKeyTaken extends ConflictError {}

/** The Postgres event store: optimistic, gapless per-session sequences in one statement per append. */
export class PgEventStore implements EventStore {
  private readonly notifier: BatchedNotifier;
  private readonly cache = new SessionStateCache();
  /** Pool appends of this process that have started and not finished. */
  private appendsInFlight = 0;
  /** The projection tables' column types, for the narrow typed statement (null until loaded). */
  private columnTypes: ColumnTypes | null = null;
  private columnTypesLoading: Promise<void> | null = null;
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    this.notifier = new BatchedNotifier(db.url);
  }

  /** Drops this process's cached rows for a session (the next append reads them afresh). */
  forgetCachedState(sessionId: string): void {
    this.cache.forget(sessionId);
  }

  /** Flushes pending notifications and closes the notifier connection. */
  async close(): Promise<void> {
    await this.notifier.close();
  }

  append(sessionId: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    return this.appendWith(this.db, sessionId, events, options);
  }

  /**
   * Append on a given connection. On the pool: optimistic first (two round trips, no lock); after
   * a few lost races, the append takes the session row lock in its own transaction before it reads,
   * so a hot session cannot starve a writer: every append that changes the session's state writes
   * that row before it takes its sequence (see append-statement.ts), so it waits for the lock holder
   * and then loses the race instead of winning it. (An append that changes nothing on the session
   * row takes no lock there and can still overtake it; the retry is bounded.) Inside a caller's
   * transaction (the claim): one optimistic attempt, with the NOTIFY in the statement so it is
   * delivered when the caller commits.
   */
  async appendWith(
    q: Queryable,
    sessionId: string,
    events: readonly NewEvent[],
    options: AppendOptions,
    preread?: PrereadState,
  ): Promise<AppendResult> {
    const encoded = encodeBatch(sessionId, events);
    if (q !== this.db) return (await this.tryAppend(q, sessionId, encoded, options, true, { preread })).result;
    // Alone in this process: the NOTIFY rides in the statement (one round trip, nothing after the
    // commit). With appends overlapping, it goes after the commit through the BatchedNotifier, so
    // the committers keep sharing WAL flushes (see BatchedNotifier and ADR 0014).
    const alone = this.appendsInFlight === 0;
    this.appendsInFlight++;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          const done =
            attempt <= OPTIMISTIC_ATTEMPTS
              ? await this.tryAppend(this.db, sessionId, encoded, options, alone)
              : await this.db.transaction(async (client) => {
                  await client.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
                  return this.tryAppend(client, sessionId, encoded, options, alone);
                });
          if (done.notifications.length > 0) void this.notifier.send(done.notifications);
          return done.result;
        } catch (err) {
          // Only a lost race is retried, and never when the caller pinned the expected sequence.
          if (
            !(err instanceof ConcurrencyConflict) ||
            options.expectedSequence !== undefined ||
            attempt >= MAX_ATTEMPTS
          )
            throw err;
          if (attempt < OPTIMISTIC_ATTEMPTS) await this.clock.sleep(Math.floor(Math.random() * 3) + 1);
        }
      }
    } finally {
      this.appendsInFlight--;
    }
  }

  /**
   * Appends inside the caller's open transaction on `client` and commits it, in one round trip
   * when it can: the statement, already prepared on this connection, is sent as
   * `EXECUTE name(literals); COMMIT` (its values inlined with the driver's `escapeLiteral`);
   * otherwise as usual, followed by `COMMIT`. The caller's transaction is over when this returns;
   * when it throws, the caller rolls back. A sequence taken meanwhile fails the statement itself
   * (the unique violation), so the COMMIT never runs; a read-model generation that moved is found
   * after the COMMIT (the statement wrote nothing) and leaves committed only what the caller wrote
   * before it, which the caller must allow for.
   */
  async appendAndCommit(
    client: Queryable,
    sessionId: string,
    events: readonly NewEvent[],
    options: AppendOptions,
    preread?: PrereadState,
  ): Promise<AppendResult> {
    const encoded = encodeBatch(sessionId, events);
    return (await this.tryAppend(client, sessionId, encoded, options, true, { preread, commit: true })).result;
  }

  private async tryAppend(
    q: Queryable,
    sessionId: string,
    encoded: { e: NewEvent; type: StoredEvent['type']; version: number }[],
    options: AppendOptions,
    notifyInStatement: boolean,
    how: {
      /** Rows the caller read in its transaction (the claim), folded instead of reading them. */
      readonly preread?: PrereadState;
      /** False: read the rows afresh even on the pool (a retry after a refusal on cached rows). */
      readonly useCache?: boolean;
      /** Commit the caller's transaction with the statement (`appendAndCommit`). */
      readonly commit?: boolean;
    } = {},
  ): Promise<{ result: AppendResult; notifications: Notification[] }> {
    const { preread, useCache = true, commit = false } = how;
    const createdAt = this.clock.nowIso();
    const ambientTraceId = activeTraceId();
    const drafts = encoded.map(({ e, type, version }) =>
      draftOf(e, type, version, sessionId, options.tenantId, ambientTraceId, createdAt),
    );

    // Inside a caller's transaction read (the caller may hold locks and expect fresh rows), unless
    // the caller read the rows itself in that transaction.
    const fromCache = q === this.db && useCache ? this.cache.lookup(sessionId, drafts, this.clock.nowMs()) : undefined;
    const cached = q === this.db ? fromCache : preread ? fromPreread(preread, sessionId, drafts) : undefined;
    const { state, generation, lastSequence } = cached ?? (await this.readState(q, sessionId, drafts));
    if (this.columnTypes === null) await this.loadColumnTypes(q);
    try {
      const done = await this.writeBatch(
        q,
        sessionId,
        drafts,
        state,
        lastSequence,
        generation,
        options,
        notifyInStatement,
        createdAt,
        commit,
      );
      this.cache.store(
        sessionId,
        done.result.lastSequence,
        state,
        done.changed,
        generation,
        this.clock.nowMs(),
        done.runIds,
      );
      return done;
    } catch (e) {
      this.cache.forget(sessionId);
      // A refusal decided on cached rows (a fence, an expected sequence, a lost gate) may only say
      // the cache was stale: rows this process recorded late, after a newer append of the session
      // (the submit's, recorded after the claim it woke). Only a refusal on rows read now is final.
      if (fromCache && isRefusal(e))
        return this.tryAppend(q, sessionId, encoded, options, notifyInStatement, { useCache: false });
      throw e;
    }
  }

  private async writeBatch(
    q: Queryable,
    sessionId: string,
    drafts: StoredEvent[],
    state: Map<Projection, Map<string, Row>>,
    last: number,
    generation: string,
    options: AppendOptions,
    notifyInStatement: boolean,
    createdAt: string,
    commit = false,
  ): Promise<{
    result: AppendResult;
    notifications: Notification[];
    changed: Map<Projection, Map<string, Row>>;
    /** The runs the batch's events belong to (the NOTIFY names them; the cache keeps their rows). */
    runIds: ReadonlySet<string>;
  }> {
    const creating = drafts[0].type === 'session.created';
    const sessionRow = state.get(sessionProjection)?.get(sessionId);
    if (creating && sessionRow) throw new ConflictError(`session ${sessionId} already exists`, { sessionId });
    if (!creating && !sessionRow) throw new NotFoundError(`session ${sessionId} does not exist`, { sessionId });
    if (sessionRow && sessionRow.tenant_id !== options.tenantId)
      throw new NotFoundError(`session ${sessionId} does not exist`, { sessionId });
    if (options.expectedSequence !== undefined && options.expectedSequence !== last) {
      throw new ConcurrencyConflict(
        `session ${sessionId} is at sequence ${last}, expected ${options.expectedSequence}`,
        {
          sessionId,
          actual: last,
          expected: options.expectedSequence,
        },
      );
    }
    if (options.fence) {
      const run = state.get(runProjection)?.get(options.fence.runId);
      const epoch = run ? Number(run.lease_epoch) : -1;
      if (epoch !== options.fence.leaseEpoch) {
        throw new LeaseFencedError(
          `run ${options.fence.runId} lease epoch is ${epoch}, writer holds ${options.fence.leaseEpoch}`,
          {
            runId: options.fence.runId,
            currentEpoch: epoch,
            writerEpoch: options.fence.leaseEpoch,
          },
        );
      }
    }
    const stored = drafts.map((d, i) => ({ ...d, sequence: last + i + 1 }));

    // Fold the batch through every projection, starting from the rows as they are now.
    const changed = new Map<Projection, Map<string, Row>>();
    for (const ev of stored) {
      for (const proj of PROJECTIONS) {
        const key = proj.keyOf(ev);
        if (key === null) continue;
        const current = changed.get(proj)?.get(key) ?? state.get(proj)?.get(key);
        const next = proj.evolve(current, ev);
        if (next !== undefined && next !== current) {
          if (!changed.has(proj)) changed.set(proj, new Map());
          changed.get(proj)!.set(key, next);
        }
      }
    }
    const newSessionRow = changed.get(sessionProjection)?.get(sessionId);
    if (creating && !newSessionRow)
      throw new InvalidEventPayloadError(`batch for session ${sessionId} produced no session state`, { sessionId });
    const lastSequence = last + stored.length;
    const runIds = new Set<string>();
    for (const s of stored) if (s.runId !== null) runIds.add(s.runId);
    const readyRunId = stored.some(
      (s) => s.type === 'run.queued' || s.type === 'run.resumed' || s.type === 'run.released',
    )
      ? stored.find((s) => s.type === 'run.queued' || s.type === 'run.resumed' || s.type === 'run.released')!.runId
      : null;
    const endingEvent = stored.find((s) => s.runId !== null && RUN_ENDING_EVENTS.has(s.type));
    const ending = options.continuationMayBeStored === false ? undefined : endingEvent;
    const notifyPayload = JSON.stringify({
      s: sessionId,
      t: options.tenantId,
      r: [...runIds],
      from: last + 1,
      to: lastSequence,
    });
    const statement = buildAppendStatement(sessionProjection, {
      sessionId,
      generation,
      session: creating
        ? { kind: 'create', row: newSessionRow! }
        : newSessionRow
          ? { kind: 'update', row: newSessionRow, previous: sessionRow! }
          : { kind: 'none' },
      events: stored.map((s) => ({
        session_id: s.sessionId,
        run_id: s.runId,
        sequence: s.sequence,
        event_type: s.type,
        payload_schema_version: s.schemaVersion,
        payload: s.data,
        actor_type: s.actorType,
        actor_id: s.actorId,
        tenant_id: s.tenantId,
        trace_id: s.traceId,
        created_at: s.createdAt,
      })),
      projectionWrites: projectionWrites(changed, state),
      columnTypes: this.columnTypes,
      checkpoints: [
        ...(options.interimCheckpoints ?? []).map(({ throughEvent, ...c }) => ({
          ...c,
          // In a batch that ends the run, no checkpoint of it may keep a provider continuation
          // (the clearing part of the statement does not see rows the same statement inserts).
          state:
            endingEvent && 'providerContinuation' in c.state ? { ...c.state, providerContinuation: null } : c.state,
          lastSequence: last + throughEvent + 1,
          createdAt,
        })),
        ...(options.checkpoint ? [{ ...options.checkpoint, lastSequence, createdAt }] : []),
      ],
      clearsContinuationOf: ending?.runId ?? null,
      notifyPayload,
      readyRunId,
      notifyInStatement,
    });
    let rows: { ok?: number; ids?: { id: number; sequence: number }[]; id?: string; sequence?: string }[];
    type ResultRow = { ok?: number; ids?: { id: number; sequence: number }[]; id?: string; sequence?: string };
    try {
      const inline = commit ? executeAndCommit(q, statement) : null;
      if (inline !== null) {
        const results = (await q.query(inline)) as unknown as { rows: ResultRow[] }[];
        rows = results[0].rows;
      } else {
        rows = (
          await q.query<ResultRow>({
            // Named, so each connection plans each statement shape once (the shapes are few and fixed).
            name: statement.name,
            text: statement.text,
            values: statement.values,
          })
        ).rows;
        if (commit) await q.query('COMMIT');
      }
    } catch (err) {
      throw await this.translate(err, sessionId, options);
    }
    // The narrow statement returns the events' rows only when the gate held; the JSON one
    // always returns one row saying whether it held.
    const held =
      statement.result === 'row'
        ? rows.length === 1
        : statement.result === 'rows'
          ? rows.length === stored.length
          : rows[0].ok === 1;
    if (!held) {
      throw new ConcurrencyConflict(`session ${sessionId} moved past sequence ${last} during the append`, {
        sessionId,
      });
    }
    const notifications: Notification[] = notifyInStatement
      ? []
      : [
          {
            channel: 'agent_events',
            payload: notifyPayload,
          },
        ];
    if (!notifyInStatement && readyRunId) notifications.push({ channel: 'run_ready', payload: readyRunId });
    let events: StoredEvent[];
    if (statement.result === 'row') {
      stored[0].id = Number(rows[0].id);
      events = stored;
    } else if (statement.result === 'rows') {
      const idBySeq = new Map(rows.map((x) => [Number(x.sequence), Number(x.id)]));
      for (const s of stored) s.id = idBySeq.get(s.sequence) ?? 0;
      events = stored;
    } else {
      const idBySeq = new Map(rows[0].ids!.map((x) => [Number(x.sequence), Number(x.id)]));
      for (const s of stored) s.id = idBySeq.get(s.sequence) ?? 0;
      events = stored;
    }
    // The gate held, so the rows folded here are the rows as committed.
    const fencedRun = options.fence
      ? (changed.get(runProjection)?.get(options.fence.runId) ?? state.get(runProjection)?.get(options.fence.runId))
      : undefined;
    const run = fencedRun ? toRunRecord(fencedRun) : undefined;
    return { result: { events, lastSequence, ...(run ? { run } : {}) }, notifications, changed, runIds };
  }

  private async translate(err: unknown, sessionId: string, options: AppendOptions): Promise<unknown> {
    const { code, constraint } = pgError(err);
    if (code !== '23505') return err;
    switch (constraint) {
      case 'sessions_pkey':
        return new ConflictError(`session ${sessionId} already exists`, { sessionId });
      case 'events_session_sequence_key':
        return new ConcurrencyConflict(`session ${sessionId} sequence was taken concurrently`, { sessionId });
      case 'runs_one_active_per_session': {
        const r = await this.db.query<{ id: string; status: string }>(
          `SELECT id, status FROM runs WHERE session_id = $1 AND status NOT IN ('completed','failed','cancelled') LIMIT 1`,
          [sessionId],
        );
        return new ConflictError(`session ${sessionId} already has an active run`, {
          sessionId,
          activeRunId: r.rows[0]?.id ?? null,
          activeRunStatus: r.rows[0]?.status ?? null,
        });
      }
      case 'idempotency_keys_pkey':
        return new IdempotencyKeyTaken('idempotency key already used', { sessionId, tenantId: options.tenantId });
      case 'tool_invocations_idempotency_key_key':
        return new ConflictError('a tool invocation with this idempotency key already exists', { sessionId });
      case 'checkpoints_run_version_key':
        return new ConcurrencyConflict('checkpoint version already written', { sessionId });
      default:
        return new ConflictError(`unique constraint ${constraint ?? '?'} violated`, { sessionId, constraint });
    }
  }

  /**
   * Reads the projection tables' column types once per store (one query for the process's life):
   * the narrow append statement casts each parameter to its column's type. On failure the store
   * keeps using the JSON-record statement, which needs no types.
   */
  private loadColumnTypes(q: Queryable): Promise<void> {
    // On the append's own connection (inside a caller's transaction too: it may hold the pool's last
    // client). `to_regclass` cannot fail, so the read never aborts that transaction.
    this.columnTypesLoading ??= q
      .query<{ tbl: string; col: string; typ: string }>(
        `SELECT c.relname AS tbl, a.attname AS col, format_type(a.atttypid, NULL) AS typ
           FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          WHERE a.attrelid IN (SELECT to_regclass(t) FROM unnest($1::text[]) AS t) AND a.attnum > 0 AND NOT a.attisdropped`,
        [PROJECTIONS.map((p) => p.table)],
      )
      .then((r) => {
        const types = new Map<string, Map<string, string>>();
        for (const { tbl, col, typ } of r.rows) {
          if (!types.has(tbl)) types.set(tbl, new Map());
          types.get(tbl)!.set(col, typ);
        }
        const complete = PROJECTIONS.every((p) => p.columns.every((c) => types.get(p.table)?.has(c)));
        if (complete) this.columnTypes = types;
      })
      .catch(() => undefined);
    return this.columnTypesLoading;
  }

  /** Reads every row the batch will touch, in one round trip. */
  private async readState(
    q: Queryable,
    sessionId: string,
    drafts: StoredEvent[],
  ): Promise<{ state: Map<Projection, Map<string, Row>>; generation: string; lastSequence: number }> {
    // The read-model generation (last repair) travels with the rows: a write based on rows read
    // before a repair must not land after it (the append statement re-checks it). So does the
    // session's last sequence, the gate the batch's first event must follow.
    const values: unknown[] = [sessionId];
    const parts: string[] = [
      `SELECT '${GENERATION}' AS p, to_jsonb(${GENERATION_READ_SQL}) AS r`,
      `SELECT '${LAST_SEQUENCE}' AS p, to_jsonb(${lastSequenceSql('$1::uuid')}) AS r`,
    ];
    for (const proj of PROJECTIONS) {
      if (proj.keyColumn === null) continue;
      const keys = new Set<string>();
      if (proj === sessionProjection) keys.add(sessionId);
      else
        for (const d of drafts) {
          const k = proj.keyOf(d);
          if (k !== null) keys.add(k);
        }
      if (keys.size === 0) continue;
      values.push([...keys]);
      parts.push(
        `SELECT '${proj.name}' AS p, to_jsonb(t) AS r FROM ${proj.table} t WHERE t.${proj.keyColumn} = ANY($${values.length}::uuid[])`,
      );
    }
    const res = await q.query<{ p: string; r: Row }>(parts.join(' UNION ALL '), values);
    const out = new Map<Projection, Map<string, Row>>();
    let generation = '';
    let lastSequence = 0;
    for (const { p, r } of res.rows) {
      if (p === GENERATION) {
        generation = r as unknown as string;
        continue;
      }
      if (p === LAST_SEQUENCE) {
        lastSequence = Number(r);
        continue;
      }
      const proj = PROJECTIONS.find((x) => x.name === p)!;
      if (!out.has(proj)) out.set(proj, new Map());
      out.get(proj)!.set(String(r[proj.keyColumn!]), r);
    }
    return { state: out, generation, lastSequence };
  }

  async listAfter(sessionId: string, sequence: number, principal: Principal, limit = 1000): Promise<StoredEvent[]> {
    // Named: every SSE hub reads each append through it, so it is parsed and planned once per connection.
    const res = await this.db.query<EventRow>({
      name: 'agent_list_after',
      text: `SELECT ${EVENT_COLUMNS} FROM events WHERE session_id = $1 AND tenant_id = $2 AND sequence > $3 ORDER BY sequence LIMIT $4`,
      values: [sessionId, principal.tenantId, sequence, limit],
    });
    return res.rows.map(decodeEvent);
  }

  asPending(sessionId: string, tenantId: string, events: readonly NewEvent[]): StoredEvent[] {
    const createdAt = this.clock.nowIso();
    const ambientTraceId = activeTraceId();
    return this.asRead(
      events.map((e) =>
        draftOf(e, e.type, EVENT_CATALOG[e.type].currentVersion, sessionId, tenantId, ambientTraceId, createdAt),
      ),
    );
  }

  asRead(events: readonly StoredEvent[]): StoredEvent[] {
    // Every other field reads back as the append built it (ids, sequences, the current schema
    // version, which the upcasters leave alone); `createdAt` as `decodeEvent` spells a timestamptz.
    return events.map(
      (e) => ({ ...e, data: jsonbShape(e.data), createdAt: new Date(e.createdAt).toISOString() }) as StoredEvent,
    );
  }

  async listRunEvents(runId: string, principal: Principal, afterSequence = 0): Promise<StoredEvent[]> {
    const res = await this.db.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE run_id = $1 AND tenant_id = $2 AND sequence > $3 ORDER BY id`,
      [runId, principal.tenantId, afterSequence],
    );
    return res.rows.map(decodeEvent);
  }

  async readGlobal(
    after: GlobalPosition | null,
    limit: number,
  ): Promise<{ events: StoredEvent[]; position: GlobalPosition | null }> {
    const res = await this.db.query<EventRow & { transaction_id: string }>(
      `SELECT ${EVENT_COLUMNS}, transaction_id::text AS transaction_id FROM events
        WHERE (transaction_id, id) > ($1::xid8, $2::bigint)
          AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY transaction_id, id
        LIMIT $3`,
      [after?.transactionId ?? '0', after?.eventId ?? 0, limit],
    );
    const events = res.rows.map(decodeEvent);
    const lastRow = res.rows[res.rows.length - 1];
    return {
      events,
      position: lastRow ? { transactionId: lastRow.transaction_id, eventId: Number(lastRow.id) } : after,
    };
  }
}

/**
 * The active span's trace id, stamped on events that carry none: whoever appends inside a traced
 * HTTP request or run attempt (the API, the worker, the CLI) writes events that name their trace.
 * Null with tracing off (the API's no-op span has no valid context).
 */
function activeTraceId(): string | null {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? sc.traceId : null;
}

/** An event as an append stores it, before its id and sequence are known (both 0 here). */
function draftOf(
  e: NewEvent,
  type: StoredEvent['type'],
  version: number,
  sessionId: string,
  tenantId: string,
  ambientTraceId: string | null,
  createdAt: string,
): StoredEvent {
  return {
    id: 0,
    sessionId,
    runId: e.runId ?? null,
    sequence: 0,
    type,
    schemaVersion: version,
    data: e.data,
    actorType: e.actorType ?? 'system',
    actorId: e.actorId ?? null,
    tenantId,
    traceId: e.traceId ?? ambientTraceId,
    createdAt,
  } as StoredEvent;
}

/** The rows a batch touches, from a caller's pre-read, or undefined when it does not cover them all. */
function fromPreread(
  preread: PrereadState,
  sessionId: string,
  drafts: readonly StoredEvent[],
): { state: Map<Projection, Map<string, Row>>; generation: string; lastSequence: number } | undefined {
  const state = new Map<Projection, Map<string, Row>>();
  for (const proj of PROJECTIONS) {
    if (proj.keyColumn === null) continue;
    const keys = new Set<string>(proj === sessionProjection ? [sessionId] : []);
    if (proj !== sessionProjection)
      for (const d of drafts) {
        const k = proj.keyOf(d);
        if (k !== null) keys.add(k);
      }
    for (const key of keys) {
      const row = preread.rows.get(proj.table)?.find((r) => String(r[proj.keyColumn!]) === key);
      if (!row) return undefined;
      if (!state.has(proj)) state.set(proj, new Map());
      state.get(proj)!.set(key, row);
    }
  }
  return { state, generation: preread.generation, lastSequence: preread.lastSequence };
}

/** The changed rows of every projection but the session, each with the stored row it replaces. */
function projectionWrites(
  changed: ReadonlyMap<Projection, ReadonlyMap<string, Row>>,
  state: ReadonlyMap<Projection, ReadonlyMap<string, Row>>,
): ProjectionWrite[] {
  const writes: ProjectionWrite[] = [];
  for (const [projection, rows] of changed) {
    if (projection === sessionProjection) continue;
    for (const [key, row] of rows) writes.push({ projection, row, previous: state.get(projection)?.get(key) });
  }
  return writes;
}

/** The refusals an append decides from the rows it folds from (as opposed to bad input or a broken connection). */
function isRefusal(e: unknown): boolean {
  return (
    e instanceof LeaseFencedError ||
    e instanceof ConcurrencyConflict ||
    e instanceof ConflictError ||
    e instanceof NotFoundError
  );
}

/** The batch checked and encoded for an append: refused whole, before anything is sent. */
function encodeBatch(sessionId: string, events: readonly NewEvent[]) {
  if (events.length === 0) throw new InvalidEventPayloadError('append needs at least one event', { sessionId });
  return events.map((e, i) => ({ e, ...encodeEvent(e, i) }));
}

/**
 * `EXECUTE name(literals); COMMIT` for `statement` on connection `q`, or null when that cannot be
 * sent: the statement is not prepared on this connection yet (the driver prepares it on first use
 * and records it in `connection.parsedStatements`; a driver without that record always takes the
 * ordinary path), or a value is not a plain string, number, boolean or null. Every value goes as a
 * quoted literal (the driver's `escapeLiteral`), which the server coerces to the parameter's type exactly as it
 * would the same text sent as a parameter.
 */
function executeAndCommit(q: Queryable, statement: { name: string; values: readonly unknown[] }): string | null {
  const prepared = (q as { connection?: { parsedStatements?: Record<string, unknown> } }).connection?.parsedStatements;
  if (!prepared || prepared[statement.name] === undefined) return null;
  const literals: string[] = [];
  for (const v of statement.values) {
    if (v === null || v === undefined) literals.push('NULL');
    else if (typeof v === 'string') literals.push(escapeLiteral(v));
    else if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean' || typeof v === 'bigint')
      literals.push(`'${String(v)}'`);
    else return null;
  }
  return `EXECUTE ${statement.name}(${literals.join(', ')}); COMMIT`;
}
