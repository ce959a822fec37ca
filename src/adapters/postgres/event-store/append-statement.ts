import { createHash } from 'node:crypto';
import type { Projection, Row } from '../../../domain/projections';

/**
 * Builds the single SQL statement that appends a batch atomically. The gate is the events' insert
 * itself: `UNIQUE (session_id, sequence)` refuses a writer whose sequence was taken (optimistic
 * concurrency: the unique violation is its ConcurrencyConflict, and the statement writes nothing),
 * and the insert selects its rows only if the read-model generation is still the one the rows were
 * read at (no row: nothing else is written either). The session row is written only when the
 * session's own state changes (sessions projection v3); it is then written first and gates the
 * events in turn, so a writer that changes the session takes its row lock before its sequence (the
 * order the fallback of `PgEventStore.appendWith` relies on). Every other part (projection rows,
 * checkpoints, the continuation clearing) selects from the events' insert, so it writes only if the
 * events were written. One statement = one round trip and one implicit transaction. The NOTIFY rides
 * in the statement when the store asks for it (delivered at commit), else the store sends it after
 * the commit (see BatchedNotifier).
 *
 * Two encodings of the same writes (ADR 0014):
 *  - narrow and typed, for the common small batch (up to eight events, a few rows): the events are
 *    one typed VALUES row each, every projection row is its own statement part with one typed
 *    parameter per column, and a row that already exists is a plain UPDATE of only the columns the
 *    batch changed — no JSON record to parse, no upsert arbiter, no unchanged column rewritten;
 *  - JSON records (`jsonb_to_recordset` / `jsonb_populate_recordset` upserts of whole rows), for
 *    larger batches, so the number of statement shapes stays bounded.
 * Both write the same rows: the gate guarantees the rows the batch was folded from are the rows as
 * stored (every change to them is an append, and the appends before this one are exactly the
 * sequences below the batch's), so "only the changed columns" and "the whole row" end in the same
 * state.
 */

/** SQL type (without modifiers, so assignment still enforces lengths) of each column, by table. */
export type ColumnTypes = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** One projection row the batch writes: its new state, and the stored row it replaces (if any). */
export interface ProjectionWrite {
  readonly projection: Projection;
  readonly row: Row;
  /** The row as stored before the batch; undefined when the fold created it. */
  readonly previous: Row | undefined;
}

/** What the batch does to the session row. */
export type SessionWrite =
  /** The batch creates the session (its first event is `session.created`). */
  | { readonly kind: 'create'; readonly row: Row }
  /** The session's own state changes: `row` replaces `previous`. */
  | { readonly kind: 'update'; readonly row: Row; readonly previous: Row }
  /** Nothing on the session row changes (most of a run's events): it is not written. */
  | { readonly kind: 'none' };

export interface AppendStatementInput {
  readonly sessionId: string;
  /** The read-model generation the rows were read at (see GENERATION_SQL). */
  readonly generation: string;
  readonly session: SessionWrite;
  readonly events: readonly Record<string, unknown>[];
  /** Rows of the other projections the batch changed (not the session row). */
  readonly projectionWrites: readonly ProjectionWrite[];
  /** The batch's checkpoints, in version order (none, the final one, or interim ones and the final one). */
  readonly checkpoints: readonly {
    runId: string;
    version: number;
    state: unknown;
    lastSequence: number;
    createdAt: string;
  }[];
  /** The run whose checkpoints' provider continuations the batch clears (it ends that run). */
  readonly clearsContinuationOf: string | null;
  readonly notifyPayload: string;
  readonly readyRunId: string | null;
  /** Put the NOTIFYs inside the statement (delivered at the statement's or the caller's commit). */
  readonly notifyInStatement: boolean;
  /** Column types of the projection tables; null falls back to the JSON-record encoding. */
  readonly columnTypes: ColumnTypes | null;
}

/**
 * Largest batch written in the narrow encoding (events; projection rows). Eight covers every batch
 * the run loop writes (a model response with its tool calls' proposal and authorization; a pure
 * tool's proposal, authorization, start and result with the step's checkpoint and the next model
 * call's start, six; the answer with the run's completion; the claim's three events), which in the
 * JSON encoding cost the server ~2.5x the narrow statement's execution (ADR 0014). Each event count
 * is its own statement shape, so the bound also bounds the prepared statements per connection.
 */
const NARROW_MAX_EVENTS = 8;
const NARROW_MAX_ROWS = 6;

const EVENT_COLUMNS = [
  ['session_id', 'uuid'],
  ['run_id', 'uuid'],
  ['sequence', 'bigint'],
  ['event_type', 'text'],
  ['payload_schema_version', 'integer'],
  ['payload', 'jsonb'],
  ['actor_type', 'text'],
  ['actor_id', 'text'],
  ['tenant_id', 'text'],
  ['trace_id', 'text'],
  ['created_at', 'timestamptz'],
] as const;

/** Statement texts by shape: the text depends only on which parts are present, never on the values. */
const texts = new Map<string, { text: string; name: string }>();

/**
 * An append statement. Its result is one of three forms:
 *  - `row`: the narrow statement of one event returns one row `{ id }` (the event's id) when the
 *    sequence gate held and no row when it did not;
 *  - `rows`: the narrow statement of several events returns one row `{ id, sequence }` per event
 *    when the gate held and no row when it did not;
 *  - `ids`: the JSON-record statement always returns one row `{ ok, ids }`, `ok` 1 when the gate
 *    held, `ids` the events' `{ id, sequence }`.
 */
export interface AppendStatement {
  readonly text: string;
  readonly name: string;
  readonly values: unknown[];
  readonly result: 'row' | 'rows' | 'ids';
}

/**
 * The statement for `input`: its values, and its text and prepared-statement name, which are built
 * once per shape and reused, so an append only computes its shape key and serializes its values.
 */
export function buildAppendStatement(sessionProjection: Projection, input: AppendStatementInput): AppendStatement {
  const b = new StatementBuilder();
  const types = input.columnTypes;
  const narrow =
    types !== null &&
    input.events.length <= NARROW_MAX_EVENTS &&
    input.projectionWrites.length <= NARROW_MAX_ROWS &&
    input.projectionWrites.every((w) => types.has(w.projection.table)) &&
    types.has(sessionProjection.table);

  // The session row, when the batch writes it: it goes first and gates the events (`FROM sw`), so
  // a writer that changes the session holds its row lock before it takes its sequence. Placeholders
  // are numbered in the order values are added (`b.value` returns the number); the text builders
  // only run the first time a shape is seen. (Were a batch's fold to end where it started, with
  // not even `updated_at` moved, there would be no column to set: the row is then left alone.)
  const sessionChanges =
    narrow && input.session.kind === 'update'
      ? changedColumns(sessionProjection, input.session.row, input.session.previous)
      : null;
  const session: SessionWrite =
    sessionChanges !== null && sessionChanges.length === 0 ? { kind: 'none' } : input.session;
  let eventsGate: string;
  if (session.kind === 'create') {
    const cols = sessionProjection.columns;
    const row = b.value(JSON.stringify(session.row));
    b.part(
      'sc',
      () =>
        `sw AS (INSERT INTO sessions (${cols.join(', ')}) SELECT ${cols.join(', ')} FROM jsonb_populate_record(NULL::sessions, $${row}::jsonb) RETURNING 1 AS ok)`,
    );
    eventsGate = 'sw';
  } else if (session.kind === 'update' && sessionChanges !== null) {
    const sessTypes = types!.get(sessionProjection.table)!;
    const changed = sessionChanges;
    const first = b.values.length + 1;
    for (const c of changed) b.value(sqlValue(session.row[c], sessTypes.get(c)!));
    const id = b.value(input.sessionId);
    const generation = b.value(input.generation);
    b.part(
      `su:${changed.join(',')}`,
      () =>
        `sw AS (UPDATE sessions s SET ${changed.map((c, j) => `${c} = $${first + j}::${sessTypes.get(c)!}`).join(', ')} WHERE s.id = $${id}::uuid AND ${GENERATION_SQL} = $${generation}::text RETURNING 1 AS ok)`,
    );
    eventsGate = 'sw';
  } else if (session.kind === 'update') {
    const cols = sessionProjection.columns;
    const row = b.value(JSON.stringify(session.row));
    const id = b.value(input.sessionId);
    const generation = b.value(input.generation);
    b.part(
      'sj',
      () =>
        `sw AS (UPDATE sessions s SET (${cols.join(', ')}) = (SELECT ${cols.map((c) => `r.${c}`).join(', ')} FROM jsonb_populate_record(NULL::sessions, $${row}::jsonb) r) WHERE s.id = $${id}::uuid AND ${GENERATION_SQL} = $${generation}::text RETURNING 1 AS ok)`,
    );
    eventsGate = 'sw';
  } else {
    // No session row written: the events' insert checks the generation itself.
    const generation = b.value(input.generation);
    b.key('sn');
    eventsGate = `(SELECT 1 WHERE ${GENERATION_SQL} = $${generation}::text) AS sw`;
  }

  // The events, selected from their gate (one row when it held, none otherwise). Every later part of
  // the narrow statement reads its own gate by selecting from (or joining) `ev`, the events' insert:
  // the same condition as `WHERE EXISTS (SELECT 1 FROM ev)`, without an InitPlan and its CTE scan per
  // part, which the server initialises on every execution (ADR 0014, part 5).
  const gate = input.events.length === 1 ? 'ev' : '(SELECT 1 FROM ev LIMIT 1) AS g';
  if (narrow && input.events.length === 1) {
    const e = input.events[0];
    const first = b.values.length + 1;
    for (const [c, t] of EVENT_COLUMNS) b.value(sqlValue(e[c], t));
    b.part(
      'e1',
      () =>
        `ev AS (INSERT INTO events (${EVENT_COLUMNS.map(([c]) => c).join(', ')}) SELECT ${EVENT_COLUMNS.map(([, t], j) => `$${first + j}::${t}`).join(', ')} FROM ${eventsGate} RETURNING id)`,
    );
  } else if (narrow) {
    // One typed VALUES row per event; inserted in sequence order, so event ids rise with sequence
    // within the batch (the global reader and run listings order by id).
    const first = b.values.length + 1;
    for (const e of input.events) for (const [c, t] of EVENT_COLUMNS) b.value(sqlValue(e[c], t));
    const n = input.events.length;
    const cols = EVENT_COLUMNS.map(([c]) => c).join(', ');
    b.part(
      `e${n}`,
      () =>
        `ev AS (INSERT INTO events (${cols}) SELECT ${EVENT_COLUMNS.map(([c]) => `v.${c}`).join(', ')} FROM ${eventsGate}, (VALUES ${Array.from(
          { length: n },
          (_, i) => `(${EVENT_COLUMNS.map(([, t], j) => `$${first + i * EVENT_COLUMNS.length + j}::${t}`).join(', ')})`,
        ).join(', ')}) AS v(${cols}) ORDER BY v.sequence RETURNING id, sequence)`,
    );
  } else {
    const events = b.value(JSON.stringify(input.events));
    b.part(
      'ej',
      () => `ev AS (
    INSERT INTO events (${EVENT_COLUMNS.map(([c]) => c).join(', ')})
    SELECT ${EVENT_COLUMNS.map(([c]) => `e.${c}`).join(', ')}
    FROM jsonb_to_recordset($${events}::jsonb) AS e(${EVENT_COLUMNS.map(([c, t]) => `${c} ${t}`).join(', ')}), ${eventsGate}
    ORDER BY e.sequence
    RETURNING id, sequence)`,
    );
  }

  // The other projections' rows.
  if (narrow) {
    for (let i = 0; i < input.projectionWrites.length; i++) {
      const w = input.projectionWrites[i];
      writeRowNarrow(b, i, w, types.get(w.projection.table)!, gate);
    }
  } else {
    const byProjection = new Map<Projection, Row[]>();
    for (const w of input.projectionWrites) {
      if (!byProjection.has(w.projection)) byProjection.set(w.projection, []);
      byProjection.get(w.projection)!.push(w.row);
    }
    [...byProjection].forEach(([proj, rows], i) => {
      const p = b.value(JSON.stringify(rows));
      b.part(`pj:${proj.table}`, () => {
        const cols = proj.columns.join(', ');
        return `p${i} AS (INSERT INTO ${proj.table} (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${proj.table}, $${p}::jsonb) WHERE EXISTS (SELECT 1 FROM ev)${onConflict(proj)})`;
      });
    });
  }

  const cps = input.checkpoints;
  if (cps.length > 0) {
    const first = b.values.length + 1;
    for (const c of cps) {
      b.value(c.runId);
      b.value(c.version);
      b.value(JSON.stringify(c.state));
      b.value(c.lastSequence);
      b.value(c.createdAt);
    }
    const row = (i: number) => {
      const f = first + i * 5;
      return `$${f}::uuid, $${f + 1}::int, $${f + 2}::jsonb, $${f + 3}::bigint, $${f + 4}::timestamptz`;
    };
    const from = narrow ? `FROM ${gate}` : 'WHERE EXISTS (SELECT 1 FROM ev)';
    const cols = 'run_id, version, state, last_event_sequence, created_at';
    b.part(`${narrow ? 'k' : 'kj'}${cps.length}`, () =>
      cps.length === 1
        ? `ck AS (INSERT INTO checkpoints (${cols}) SELECT ${row(0)} ${from})`
        : `ck AS (INSERT INTO checkpoints (${cols}) SELECT v.* FROM (VALUES ${cps.map((_, i) => `(${row(i)})`).join(', ')}) AS v(${cols}) WHERE EXISTS (SELECT 1 FROM ev) ORDER BY v.version)`,
    );
  }

  if (input.clearsContinuationOf !== null) {
    // Only the run's earlier checkpoints: a data-modifying CTE does not see a sibling's insert, and
    // a terminal checkpoint holds none. Gated like every part.
    const run = b.value(input.clearsContinuationOf);
    b.part(
      'kc',
      () =>
        `kc AS (UPDATE checkpoints SET state = jsonb_set(state, '{providerContinuation}', 'null'::jsonb) WHERE run_id = $${run}::uuid AND jsonb_typeof(state->'providerContinuation') = 'object' AND EXISTS (SELECT 1 FROM ev))`,
    );
  }

  const notify = input.notifyInStatement ? b.value(input.notifyPayload) : 0;
  const ready = notify && input.readyRunId !== null ? b.value(input.readyRunId) : 0;
  const notifyKey = `${notify ? 'n' : ''}${ready ? 'r' : ''}`;
  if (narrow && input.events.length > 1) {
    // One row per event when the gate held, none otherwise; the NOTIFYs are evaluated for the
    // batch's first event only (one per append, and none for a refused one).
    const firstSequence = notify ? b.value(input.events[0].sequence) : 0;
    return b.finish(`rows:${notifyKey}`, 'rows', () => {
      const once = (call: string) => `CASE WHEN ev.sequence = $${firstSequence}::bigint THEN ${call} END`;
      const n1 = notify ? `, ${once(`pg_notify('agent_events', $${notify}::text)`)} AS n1` : '';
      const n2 = ready ? `, ${once(`pg_notify('run_ready', $${ready}::text)`)} AS n2` : '';
      return `SELECT ev.id, ev.sequence${n1}${n2} FROM ev ORDER BY ev.sequence`;
    });
  }
  if (narrow) {
    // One row (the event's id) when the gate held, none otherwise; the NOTIFYs are evaluated for
    // that row only, so a refused append never notifies. Data-modifying CTEs run to completion
    // whether or not the final SELECT reads them (PostgreSQL's rule for WITH), so the projection
    // parts need not be referenced here.
    return b.finish(`row:${notifyKey}`, 'row', () => {
      const n1 = notify ? `, pg_notify('agent_events', $${notify}::text) AS n1` : '';
      const n2 = ready ? `, pg_notify('run_ready', $${ready}::text) AS n2` : '';
      return `SELECT ev.id${n1}${n2} FROM ev`;
    });
  }
  return b.finish(
    `ids:${notifyKey}`,
    'ids',
    () => `SELECT CASE WHEN EXISTS (SELECT 1 FROM ev) THEN 1 ELSE 0 END AS ok,
       (SELECT coalesce(json_agg(json_build_object('id', id, 'sequence', sequence) ORDER BY sequence), '[]'::json) FROM ev) AS ids${
         notify
           ? `, CASE WHEN EXISTS (SELECT 1 FROM ev) THEN pg_notify('agent_events', $${notify}::text) END AS n1`
           : ''
       }${ready ? `, CASE WHEN EXISTS (SELECT 1 FROM ev) THEN pg_notify('run_ready', $${ready}::text) END AS n2` : ''}`,
  );
}

/** One row of a keyed or insert-only projection, narrow and typed. */
function writeRowNarrow(
  b: StatementBuilder,
  i: number,
  w: ProjectionWrite,
  types: ReadonlyMap<string, string>,
  gate: string,
): void {
  const proj = w.projection;
  if (w.previous !== undefined && proj.keyColumn !== null) {
    const key = proj.keyColumn;
    const changed = changedColumns(proj, w.row, w.previous);
    if (changed.length === 0) return;
    const first = b.values.length + 1;
    for (const col of changed) b.value(sqlValue(w.row[col], types.get(col)!));
    const k = b.value(sqlValue(w.row[key], types.get(key)!));
    b.part(
      `pu:${proj.table}:${changed.join(',')}`,
      () =>
        `p${i} AS (UPDATE ${proj.table} t SET ${changed.map((col, j) => `${col} = $${first + j}::${types.get(col)!}`).join(', ')} FROM ${gate} WHERE t.${key} = $${k}::${types.get(key)!})`,
    );
    return;
  }
  // A row the fold created (or an insert-only projection): insert it whole. A keyed row created by
  // its creation event may already exist (the event was appended again after a crash); it is then
  // replaced, as the JSON encoding's upsert does.
  const first = b.values.length + 1;
  for (const col of proj.columns) b.value(sqlValue(w.row[col], types.get(col)!));
  b.part(
    `pi:${proj.table}`,
    () =>
      `p${i} AS (INSERT INTO ${proj.table} (${proj.columns.join(', ')}) SELECT ${proj.columns.map((col, j) => `$${first + j}::${types.get(col)!}`).join(', ')} FROM ${gate}${onConflict(proj)})`,
  );
}

function onConflict(proj: Projection): string {
  if (proj.keyColumn === null) return '';
  return ` ON CONFLICT (${proj.keyColumn}) DO UPDATE SET ${proj.columns
    .filter((c) => c !== proj.keyColumn)
    .map((c) => `${c} = EXCLUDED.${c}`)
    .join(', ')}`;
}

/** Columns whose value differs from the stored row (a replaced object counts as changed). */
function changedColumns(proj: Projection, row: Row, previous: Row | undefined): string[] {
  if (previous === undefined) return [...proj.columns];
  return proj.columns.filter((c) => !sameValue(row[c], previous[c]));
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || ((a === null || a === undefined) && (b === null || b === undefined));
}

/** A row value as a query parameter for a column of `type`: JSON columns get JSON text. */
function sqlValue(v: unknown, type: string): unknown {
  if (v === undefined || v === null) return null;
  if (type === 'jsonb' || type === 'json') return JSON.stringify(v);
  return v;
}

/**
 * The read-model generation: which repair last rewrote projection rows. Every repair TRUNCATEs the
 * empty marker table `read_model_generation`, which gives it a new file node, so the file node names
 * the generation (ADR 0023).
 *
 * Two spellings of the same value, for the two places it is read:
 *  - `GENERATION_SQL`, the append statement's check: `pg_relation_filenode` answers from the
 *    backend's catalog cache, so the check opens, locks and scans no relation (reading
 *    `projection_watermarks` cost every append ~10 µs of backend time). It is STABLE, so it is
 *    evaluated at execution, never folded into a cached plan. It is current there because the
 *    statement inserts into `events`: a repair holds `events` in SHARE ROW EXCLUSIVE mode until it
 *    commits, so the append's lock on `events` waits for it, and taking a lock takes in the catalog
 *    invalidations (as a transaction's start does); and once the append holds that lock, no repair
 *    can commit before the append does.
 *  - `GENERATION_READ_SQL`, for the reads that label rows with the generation they were read in (the
 *    store's state read, the claim's pre-read): the same column read from `pg_class` under the
 *    statement's snapshot, so the label and the rows come from one snapshot. The catalog cache may
 *    take in a repair's commit in the middle of a statement (at a lock taken during execution); a
 *    label newer than the rows would let rows read before a repair pass the check after it.
 */
export const GENERATION_SQL = `pg_relation_filenode('read_model_generation'::regclass)::text`;
export const GENERATION_READ_SQL = `(SELECT relfilenode::text FROM pg_class WHERE oid = 'read_model_generation'::regclass)`;

/**
 * Collects the statement's parts and values in one pass. Each part contributes a key fragment (the
 * shape) and a text builder that is only run when that shape has not been seen yet; placeholders are
 * numbered in the order values were added, which is the same for every statement of one shape.
 */
class StatementBuilder {
  readonly values: unknown[] = [];
  private readonly keys: string[] = [];
  private readonly parts: (() => string)[] = [];

  /** Adds a value; returns its placeholder's number (`$n`). */
  value(v: unknown): number {
    return this.values.push(v);
  }

  part(key: string, text: () => string): void {
    this.keys.push(key);
    this.parts.push(text);
  }

  /** Adds a key fragment for a shape difference that has no part of its own. */
  key(key: string): void {
    this.keys.push(key);
  }

  finish(selectKey: string, result: AppendStatement['result'], select: () => string): AppendStatement {
    const key = `${this.keys.join('|')}|${selectKey}`;
    let shape = texts.get(key);
    if (!shape) {
      const text = `WITH ${this.parts.map((p) => p()).join(',\n')}\n${select()}`;
      shape = { text, name: `agent_append_${createHash('sha1').update(text).digest('hex').slice(0, 16)}` };
      texts.set(key, shape);
    }
    return { text: shape.text, name: shape.name, values: this.values, result };
  }
}
