import { isSpanContextValid, trace } from '@opentelemetry/api';
import type { Clock } from '../../../ports/clock';
import type { NewEvent, StoredEvent } from '../../../domain/events/payloads';
import { PROJECTIONS, type Row } from '../../../domain/projections';
import {
  batchFacts,
  readyRunOf,
  foldBatch,
  keysTouched,
  refuseBatch,
  sequenceBefore,
  type ProjectionState,
} from '../../../domain/projections/append-batch';
import { sessionProjection } from '../../../domain/projections/session-projection';
import { runProjection } from '../../../domain/projections/run-projection';
import { notificationProjection } from '../../../domain/projections/notification-projection';
import {
  ConcurrencyConflict,
  ConflictError,
  InvalidEventPayloadError,
  LeaseFencedError,
  NotFoundError,
} from '../../../domain/errors';
import type { CheckpointWrite } from '../../../ports/run-journal';
import { pgError, type Database, type Queryable } from '../database';
import { draftEvents, lastSequenceSql } from '../event-codec';
import {
  buildAppendStatement,
  GENERATION_SQL,
  MAX_BATCH_EVENTS,
  type AppendStatement,
  type ColumnTypes,
  type ProjectionWrite,
} from './append-statement';
import { SessionStateCache } from './session-state-cache';

/** Optimistic tries before the append falls back to locking the session row. */
const OPTIMISTIC_ATTEMPTS = 3;
const MAX_ATTEMPTS = 10;
const GENERATION = '__generation';
const LAST_SEQUENCE = '__last_sequence';

/** One append: the batch and what it is conditional on (a fence and checkpoints for a run's writes). */
export interface AppendRequest {
  readonly sessionId: string;
  readonly tenantId: string;
  readonly events: readonly NewEvent[];
  readonly expectedSequence?: number;
  readonly fence?: { readonly runId: string; readonly leaseEpoch: number };
  /** Checkpoints of the fenced run, each after the batch's event at `throughEvent`. */
  readonly checkpoints?: readonly CheckpointWrite[];
  /** False: no checkpoint of the run holds a provider continuation (RunWriteOptions). */
  readonly continuationMayBeStored?: boolean;
}

export interface Appended {
  readonly events: StoredEvent[];
  readonly lastSequence: number;
  /** With a fence: the fenced run's row as the append left it. */
  readonly runRow?: Row;
}

/**
 * Rows a caller already read inside its transaction (`to_jsonb(row)` of each projection table, and
 * the read-model generation), so an in-transaction append can skip its own read round trip (the
 * claim). Used only when they cover every row the batch touches; the sequence gate validates them
 * like any read.
 */
export interface PrereadState {
  readonly generation: string;
  /** The session's last sequence as of the same read. */
  readonly lastSequence: number;
  /** Rows by projection table name. */
  readonly rows: ReadonlyMap<string, readonly Row[]>;
  /**
   * True when `rows` holds every existing row the batch touches, so a key it lacks has no row (a
   * new session and its new run: the scheduler's, ADR 0034). Otherwise a missing key means "not
   * read" and the append reads the rows itself.
   */
  readonly complete?: boolean;
}

/** A client-supplied idempotency key collided: the caller looks up the original. */
export class IdempotencyKeyTaken extends ConflictError {}

interface ReadState {
  readonly state: ProjectionState;
  readonly generation: string;
  readonly lastSequence: number;
}

/** How one attempt runs: on which rows, and whether it commits the caller's transaction. */
interface AttemptMode {
  /** Rows the caller read in its transaction (the claim), folded instead of reading them. */
  readonly preread?: PrereadState;
  /** False: read the rows afresh even on the pool (a retry after a refusal on cached rows). */
  readonly useCache?: boolean;
  /** Commit the caller's transaction with the statement (`appendAndCommit`). */
  readonly commit?: boolean;
}

/**
 * The one append of the PostgreSQL adapter, shared by the event store, the run journal and the
 * claim (ADR 0026): one statement per append (append-statement.ts), folded from the rows this
 * process cached for the session (session-state-cache.ts), read in one round trip when it has none.
 */
export class PgAppender {
  private readonly cache = new SessionStateCache();
  /** The projection tables' column types, read once per process on the first append. */
  private columnTypes: Promise<ColumnTypes> | null = null;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** Drops this process's cached rows for a session (the next append reads them afresh). */
  forgetCachedState(sessionId: string): void {
    this.cache.forget(sessionId);
  }

  /**
   * An append on the pool: optimistic first (one round trip with cached rows, two without; no
   * lock); after a few lost races, the append takes the session row lock in its own transaction
   * before it reads, so a hot session cannot starve a writer: every append that changes the
   * session's state writes that row before it takes its sequence (append-statement.ts), so it waits
   * for the lock holder and then loses the race instead of winning it. (An append that changes
   * nothing on the session row takes no lock there and can still overtake it; the retry is bounded.)
   */
  async append(req: AppendRequest): Promise<Appended> {
    checkBatch(req);
    for (let attempt = 1; ; attempt++) {
      try {
        if (attempt <= OPTIMISTIC_ATTEMPTS) return await this.attempt(this.db, req);
        return await this.db.transaction(async (client) => {
          await client.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [req.sessionId]);
          return this.attempt(client, req);
        });
      } catch (err) {
        // Only a lost race is retried, and never when the caller pinned the expected sequence.
        if (!(err instanceof ConcurrencyConflict) || req.expectedSequence !== undefined || attempt >= MAX_ATTEMPTS)
          throw err;
        if (attempt < OPTIMISTIC_ATTEMPTS) await this.clock.sleep(Math.floor(Math.random() * 3) + 1);
      }
    }
  }

  /**
   * Appends to several sessions in one transaction, in order (a run's write and the child sessions
   * `delegate.run` creates with it, ADR 0037): all or none. Each is one attempt on rows read in the
   * transaction; a refusal of any rolls all back and is thrown (a lost race is the caller's to retry).
   * Returns each append's result, in order.
   */
  async appendTogether(requests: readonly AppendRequest[]): Promise<Appended[]> {
    for (const r of requests) checkBatch(r);
    try {
      return await this.db.transaction(async (client) => {
        const done: Appended[] = [];
        for (const r of requests) done.push(await this.attempt(client, r));
        return done;
      });
    } catch (e) {
      // What the attempts cached was never committed.
      for (const r of requests) this.cache.forget(r.sessionId);
      throw e;
    }
  }

  /** One optimistic attempt inside the caller's open transaction on `client` (it commits). */
  appendIn(client: Queryable, req: AppendRequest, preread?: PrereadState): Promise<Appended> {
    checkBatch(req);
    return this.attempt(client, req, { preread });
  }

  /**
   * Appends inside the caller's open transaction on `client` and commits it: the statement and
   * `COMMIT` are written together (the pool's connections are pipelined, database.ts), one round
   * trip. The caller's transaction is over when this returns; when it throws, the caller rolls back
   * (a no-op: the COMMIT of a failed transaction rolls it back). A sequence taken meanwhile fails
   * the statement itself (the unique violation), so nothing commits; a read-model generation that
   * moved is found after the COMMIT (the statement wrote nothing) and leaves committed only what
   * the caller wrote before it, which the caller must allow for.
   */
  appendAndCommit(client: Queryable, req: AppendRequest, preread?: PrereadState): Promise<Appended> {
    checkBatch(req);
    return this.attempt(client, req, { preread, commit: true });
  }

  private async attempt(q: Queryable, req: AppendRequest, mode: AttemptMode = {}): Promise<Appended> {
    const createdAt = this.clock.nowIso();
    const drafts = draftEvents(req, createdAt, activeTraceId());
    // Inside a caller's transaction read (the caller may hold locks and expect fresh rows), unless
    // the caller read the rows itself in that transaction.
    const onPool = q === this.db;
    const fromCache =
      onPool && mode.useCache !== false ? this.cache.lookup(req.sessionId, drafts, this.clock.nowMs()) : undefined;
    const known = onPool ? fromCache : mode.preread ? fromPreread(mode.preread, req.sessionId, drafts) : undefined;
    const read = known ?? (await readState(q, req.sessionId, drafts));
    const columnTypes = await this.loadColumnTypes(q);
    try {
      const done = await this.write(q, req, drafts, read, columnTypes, createdAt, mode.commit === true);
      this.cache.store(
        req.sessionId,
        done.lastSequence,
        read.state,
        done.changed,
        read.generation,
        this.clock.nowMs(),
        done.runIds,
      );
      return done;
    } catch (e) {
      this.cache.forget(req.sessionId);
      // A refusal decided on cached rows (a fence, an expected sequence, a lost gate) may only say
      // the cache was stale: rows this process recorded late, after a newer append of the session
      // (the submit's, recorded after the claim it woke). Only a refusal on rows read now is final.
      if (fromCache && isRefusal(e)) return this.attempt(q, req, { useCache: false });
      throw e;
    }
  }

  /** Decides, folds and writes the batch on `read`; the gate refuses it if `read` is stale. */
  private async write(
    q: Queryable,
    req: AppendRequest,
    drafts: readonly StoredEvent[],
    read: ReadState,
    columnTypes: ColumnTypes,
    createdAt: string,
    commit: boolean,
  ): Promise<Appended & { changed: ProjectionState; runIds: ReadonlySet<string> }> {
    const last = sequenceBefore(drafts[0], read.lastSequence);
    refuseBatch(drafts[0], read.state, { ...req, lastSequence: last });
    const stored = drafts.map((d, i) => ({ ...d, sequence: last + i + 1 }));
    const changed = foldBatch(stored, read.state);
    const facts = batchFacts(stored);
    const statement = statementFor(req, stored, read, changed, facts, columnTypes, createdAt);
    let rows: { id: string; sequence: string }[];
    try {
      rows = await execute(q, this.db.namedStatements ? statement : { ...statement, name: undefined }, commit);
    } catch (err) {
      throw await this.translate(err, req);
    }
    // One row per event when the gate held, none when it did not.
    if (rows.length !== stored.length)
      throw new ConcurrencyConflict(`session ${req.sessionId} moved past sequence ${last} during the append`, {
        sessionId: req.sessionId,
      });
    const idBySeq = new Map(rows.map((x) => [Number(x.sequence), Number(x.id)]));
    for (const s of stored) s.id = idBySeq.get(s.sequence) ?? 0;
    // The gate held, so the rows folded here are the rows as committed.
    const fenced = req.fence?.runId;
    const runRow = fenced
      ? (changed.get(runProjection)?.get(fenced) ?? read.state.get(runProjection)?.get(fenced))
      : undefined;
    return { events: stored, lastSequence: last + stored.length, runRow, changed, runIds: facts.runIds };
  }

  private async translate(err: unknown, req: AppendRequest): Promise<unknown> {
    const { code, constraint } = pgError(err);
    if (code !== '23505') return err;
    const { sessionId } = req;
    switch (constraint) {
      case 'sessions_pkey':
        return new ConflictError(`session ${sessionId} already exists`, { sessionId });
      case 'events_session_sequence_key':
        return new ConcurrencyConflict(`session ${sessionId} sequence was taken concurrently`, { sessionId });
      case 'runs_one_active_per_session': {
        const r = await this.db.query<{ id: string; status: string }>(
          `SELECT id, status FROM runs WHERE session_id = $1 AND status NOT IN ('completed','failed','cancelled','interrupted') AND queued_behind IS NULL LIMIT 1`,
          [sessionId],
        );
        return new ConflictError(`session ${sessionId} already has an active run`, {
          sessionId,
          activeRunId: r.rows[0]?.id ?? null,
          activeRunStatus: r.rows[0]?.status ?? null,
        });
      }
      case 'idempotency_keys_pkey':
        return new IdempotencyKeyTaken('idempotency key already used', { sessionId, tenantId: req.tenantId });
      case 'tool_invocations_idempotency_key_key':
        return new ConflictError('a tool invocation with this idempotency key already exists', { sessionId });
      case 'checkpoints_run_version_key':
        return new ConcurrencyConflict('checkpoint version already written', { sessionId });
      default:
        return new ConflictError(`unique constraint ${constraint ?? '?'} violated`, { sessionId, constraint });
    }
  }

  /**
   * Reads the projection tables' column types once per process (the statement casts each parameter
   * to its column's type), on the append's own connection: inside a caller's transaction too, as it
   * may hold the pool's last client. A table or column the projections write that the database
   * lacks means its migrations have not run: the append fails saying so, and the next one reads again.
   */
  private loadColumnTypes(q: Queryable): Promise<ColumnTypes> {
    this.columnTypes ??= readColumnTypes(q).catch((e: unknown) => {
      this.columnTypes = null;
      throw e;
    });
    return this.columnTypes;
  }
}

/** Refuses an empty or oversized batch before anything is read or sent. */
function checkBatch(req: AppendRequest): void {
  if (req.events.length === 0)
    throw new InvalidEventPayloadError('append needs at least one event', { sessionId: req.sessionId });
  if (req.events.length > MAX_BATCH_EVENTS)
    throw new InvalidEventPayloadError(`an append holds at most ${MAX_BATCH_EVENTS} events`, {
      sessionId: req.sessionId,
      events: req.events.length,
    });
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

/** The statement that writes the folded batch. */
function statementFor(
  req: AppendRequest,
  stored: readonly StoredEvent[],
  read: ReadState,
  changed: ProjectionState,
  facts: ReturnType<typeof batchFacts>,
  columnTypes: ColumnTypes,
  createdAt: string,
): AppendStatement {
  const { sessionId } = req;
  const last = read.lastSequence;
  const sessionRow = read.state.get(sessionProjection)?.get(sessionId);
  const newSessionRow = changed.get(sessionProjection)?.get(sessionId);
  const ending = req.continuationMayBeStored === false ? null : facts.endedRunId;
  const writes = projectionWrites(changed, read.state);
  return buildAppendStatement(sessionProjection, {
    sessionId,
    generation: read.generation,
    session: !sessionRow
      ? { kind: 'create', row: newSessionRow! }
      : newSessionRow
        ? { kind: 'update', row: newSessionRow, previous: sessionRow }
        : { kind: 'none' },
    events: stored.map(eventRow),
    projectionWrites: writes,
    columnTypes,
    checkpoints: (req.checkpoints ?? []).map(({ throughEvent, ...c }) => ({
      runId: req.fence!.runId,
      version: c.version,
      // In a batch that ends the run, no checkpoint of it may keep a provider continuation (the
      // clearing part of the statement does not see rows the same statement inserts).
      state:
        facts.endedRunId && 'providerContinuation' in c.state ? { ...c.state, providerContinuation: null } : c.state,
      lastSequence: last + throughEvent + 1,
      createdAt,
    })),
    clearsContinuationOf: ending,
    notifyPayload: JSON.stringify({
      s: sessionId,
      t: req.tenantId,
      r: [...facts.runIds],
      from: last + 1,
      to: last + stored.length,
    }),
    readyRunId: readyRunOf(facts, sessionRow, newSessionRow),
    notificationPayload: notificationNotice(req.tenantId, sessionId, writes),
    joinRunId: parentOfEnded(facts.endedRunId, changed),
  });
}

/**
 * The `agent_notifications` NOTIFY payload when the batch creates notification rows (ADR 0036):
 * the tenant, the session, and the recipients (null: the session's owner). It only nudges the
 * notification streams and the notifier; the rows stay the source of truth.
 */
function notificationNotice(tenantId: string, sessionId: string, writes: readonly ProjectionWrite[]): string | null {
  const created = writes.filter((w) => w.projection === notificationProjection && w.previous === undefined);
  if (created.length === 0) return null;
  const principals = [...new Set(created.map((w) => (w.row.principal_id as string | null) ?? null))];
  return JSON.stringify({ t: tenantId, s: sessionId, p: principals });
}

/** The parent of the child run a batch ends, whose join the batch may complete (ADR 0037). */
function parentOfEnded(endedRunId: string | null, changed: ProjectionState): string | null {
  if (endedRunId === null) return null;
  const parent = changed.get(runProjection)?.get(endedRunId)?.parent_run_id;
  return typeof parent === 'string' ? parent : null;
}

function eventRow(s: StoredEvent): Record<string, unknown> {
  return {
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
  };
}

/** Runs the statement (named when it has a name), with `COMMIT` written right behind it when asked. */
async function execute(
  q: Queryable,
  statement: AppendStatement,
  commit: boolean,
): Promise<{ id: string; sequence: string }[]> {
  type ResultRow = { id: string; sequence: string };
  const run = statement.name
    ? q.query<ResultRow>({ name: statement.name, text: statement.text, values: statement.values })
    : q.query<ResultRow>(statement.text, statement.values);
  if (!commit) return (await run).rows;
  // Both are on the wire before the first answer arrives (pipelined); a failed statement makes the
  // COMMIT a rollback, and its own error is the one reported.
  const [res] = await Promise.all([run, q.query('COMMIT')]);
  return res.rows;
}

/** Reads every row the batch will touch, with the read-model generation and the last sequence, in one round trip. */
async function readState(q: Queryable, sessionId: string, drafts: readonly StoredEvent[]): Promise<ReadState> {
  // The read-model generation (last repair) travels with the rows: a write based on rows read
  // before a repair must not land after it (the append statement re-checks it). So does the
  // session's last sequence, the gate the batch's first event must follow.
  const values: unknown[] = [sessionId];
  const parts: string[] = [
    `SELECT '${GENERATION}' AS p, to_jsonb(${GENERATION_SQL}::text) AS r`,
    `SELECT '${LAST_SEQUENCE}' AS p, to_jsonb(${lastSequenceSql('$1::uuid')}) AS r`,
  ];
  for (const [proj, keys] of keysTouched(sessionId, drafts)) {
    values.push([...keys]);
    parts.push(
      `SELECT '${proj.name}' AS p, to_jsonb(t) AS r FROM ${proj.table} t WHERE t.${proj.keyColumn} = ANY($${values.length}::uuid[])`,
    );
  }
  const res = await q.query<{ p: string; r: Row }>(parts.join(' UNION ALL '), values);
  const state: ProjectionState = new Map();
  let generation = '';
  let lastSequence = 0;
  for (const { p, r } of res.rows) {
    if (p === GENERATION) generation = r as unknown as string;
    else if (p === LAST_SEQUENCE) lastSequence = Number(r);
    else {
      const proj = PROJECTIONS.find((x) => x.name === p)!;
      if (!state.has(proj)) state.set(proj, new Map());
      state.get(proj)!.set(String(r[proj.keyColumn!]), r);
    }
  }
  return { state, generation, lastSequence };
}

/** The rows a batch touches, from a caller's pre-read, or undefined when it does not cover them all. */
function fromPreread(preread: PrereadState, sessionId: string, drafts: readonly StoredEvent[]): ReadState | undefined {
  const state: ProjectionState = new Map();
  for (const [proj, keys] of keysTouched(sessionId, drafts)) {
    for (const key of keys) {
      const row = preread.rows.get(proj.table)?.find((r) => String(r[proj.keyColumn!]) === key);
      if (!row && preread.complete === true) continue;
      if (!row) return undefined;
      if (!state.has(proj)) state.set(proj, new Map());
      state.get(proj)!.set(key, row);
    }
  }
  return { state, generation: preread.generation, lastSequence: preread.lastSequence };
}

/** The projection tables' column types, complete or an error naming what is missing. */
async function readColumnTypes(q: Queryable): Promise<ColumnTypes> {
  // `to_regclass` cannot fail, so the read never aborts a caller's transaction.
  const r = await q.query<{ tbl: string; col: string; typ: string }>(
    `SELECT c.relname AS tbl, a.attname AS col, format_type(a.atttypid, NULL) AS typ
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE a.attrelid IN (SELECT to_regclass(t) FROM unnest($1::text[]) AS t) AND a.attnum > 0 AND NOT a.attisdropped`,
    [PROJECTIONS.map((p) => p.table)],
  );
  const types = new Map<string, Map<string, string>>();
  for (const { tbl, col, typ } of r.rows) {
    if (!types.has(tbl)) types.set(tbl, new Map());
    types.get(tbl)!.set(col, typ);
  }
  const missing = PROJECTIONS.flatMap((p) =>
    p.columns.filter((c) => !types.get(p.table)?.has(c)).map((c) => `${p.table}.${c}`),
  );
  if (missing.length > 0)
    throw new Error(`the database lacks projection columns ${missing.join(', ')}: run the migrations (agent migrate)`);
  return types;
}

/** The changed rows of every projection but the session, each with the stored row it replaces. */
function projectionWrites(changed: ProjectionState, state: ProjectionState): ProjectionWrite[] {
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
