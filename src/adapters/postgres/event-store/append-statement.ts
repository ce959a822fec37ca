import { createHash } from 'node:crypto';
import type { Projection, Row } from '../../../domain/projections';
import { toStorableText } from '../../../domain/events/storable-text';

/**
 * Builds the single SQL statement that appends a batch atomically (ADR 0004, ADR 0026). One
 * encoding: every value is a typed parameter, the events are one typed VALUES row each, and every
 * projection row is its own statement part (an existing row is a plain UPDATE of only the columns
 * the batch changed; a new one an INSERT). The gate is the events' insert itself:
 * `UNIQUE (session_id, sequence)` refuses a writer whose sequence was taken (its ConcurrencyConflict;
 * the statement writes nothing), and the insert selects its rows only while the read-model
 * generation is the one the rows were read at (no row: nothing else is written either). The session
 * row is written only when the session's own state changes; it is then written first and gates the
 * events in turn, so a writer that changes the session takes its row lock before its sequence (what
 * the locking fallback of the append relies on). Every other part selects from the events' insert, so
 * it writes only if the events were written. The NOTIFYs are part of the statement, evaluated only
 * when the gate held, and delivered when its transaction commits.
 *
 * The gate guarantees the rows the batch was folded from are the rows as stored (every change to
 * them is an append, and the appends before this one are exactly the sequences below the batch's),
 * so "only the changed columns" ends in the same state as "the whole row".
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

/** A checkpoint row of the batch. */
export interface CheckpointRow {
  readonly runId: string;
  readonly version: number;
  readonly state: unknown;
  readonly lastSequence: number;
  readonly createdAt: string;
}

export interface AppendStatementInput {
  readonly sessionId: string;
  /** The read-model generation the rows were read at (see GENERATION_SQL). */
  readonly generation: string;
  readonly session: SessionWrite;
  readonly events: readonly Record<string, unknown>[];
  /** Rows of the other projections the batch changed (not the session row). */
  readonly projectionWrites: readonly ProjectionWrite[];
  /** The batch's checkpoints, in version order. */
  readonly checkpoints: readonly CheckpointRow[];
  /** The run whose checkpoints' provider continuations the batch clears (it ends that run). */
  readonly clearsContinuationOf: string | null;
  readonly notifyPayload: string;
  readonly readyRunId: string | null;
  /** The `agent_notifications` NOTIFY's payload when the batch creates notifications (ADR 0036), else null. */
  readonly notificationPayload: string | null;
  /**
   * The parent of a child run the batch ends (ADR 0037): `run_join` is notified with its id, so a
   * worker tries the join at once. Null for any other batch.
   */
  readonly joinRunId?: string | null;
  /** Column types of the projection tables. */
  readonly columnTypes: ColumnTypes;
}

/**
 * Batches up to this size (events; projection rows) run as named statements, prepared once per
 * connection and shape: they cover every batch the run loop and the API write. A larger batch is
 * sent unnamed (planned each time), so the prepared statements per connection stay few.
 */
const NAMED_MAX_EVENTS = 8;
const NAMED_MAX_ROWS = 6;
/** PostgreSQL's limit on a statement's parameters bounds a batch: 11 per event, plus its rows. */
export const MAX_BATCH_EVENTS = 4000;

const EVENT_ROW_COLUMNS = [
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

/**
 * The read-model generation: a counter in the one row of `read_model_generation` that every
 * projection repair increments in its transaction (ADR 0026). The append statement reads it under
 * its own snapshot, taken after the statement holds its lock on `events` (which a repair holds in
 * SHARE ROW EXCLUSIVE mode until it commits), and the rows an append folds are read with it in one
 * snapshot, so rows read before a repair never pass the check after it.
 */
export const GENERATION_SQL = `(SELECT generation FROM read_model_generation)`;

/** The statement's result: one row `{ id, sequence }` per event when the gate held, none otherwise. */
export interface AppendStatement {
  readonly text: string;
  /** The prepared statement's name; undefined for a large batch (sent unnamed). */
  readonly name: string | undefined;
  readonly values: unknown[];
}

/** Statement texts by shape: the text depends only on which parts are present, never on the values. */
const texts = new Map<string, { text: string; name: string }>();

/** The statement for `input`: its values, and its text and name (built once per named shape). */
export function buildAppendStatement(sessionProjection: Projection, input: AppendStatementInput): AppendStatement {
  const named = input.events.length <= NAMED_MAX_EVENTS && input.projectionWrites.length <= NAMED_MAX_ROWS;
  const b = new StatementBuilder(named);
  const eventsGate = writeSession(b, sessionProjection, input);
  writeEvents(b, input.events, eventsGate);
  // Every later part reads its gate by selecting from (or joining) `ev`, the events' insert: the
  // same condition as `WHERE EXISTS (SELECT 1 FROM ev)`, without an InitPlan and its CTE scan per
  // part, which the server initialises on every execution (ADR 0014).
  const gate = input.events.length === 1 ? 'ev' : '(SELECT 1 FROM ev LIMIT 1) AS g';
  input.projectionWrites.forEach((w, i) => writeRow(b, i, w, input.columnTypes.get(w.projection.table)!, gate));
  writeCheckpoints(b, input.checkpoints, gate);
  if (input.clearsContinuationOf !== null) {
    // Only the run's earlier checkpoints: a data-modifying CTE does not see a sibling's insert, and
    // one the batch itself writes is stored without a continuation (PgAppender). Gated like every part.
    const run = b.value(input.clearsContinuationOf);
    b.part(
      'kc',
      () =>
        `kc AS (UPDATE checkpoints SET state = jsonb_set(state, '{providerContinuation}', 'null'::jsonb) WHERE run_id = $${run}::uuid AND jsonb_typeof(state->'providerContinuation') = 'object' AND EXISTS (SELECT 1 FROM ev))`,
    );
  }
  // One row per event when the gate held, none otherwise; the NOTIFYs are evaluated for the batch's
  // first event only (one per append, and none for a refused one). Data-modifying CTEs run to
  // completion whether or not the final SELECT reads them, so the other parts need no reference here.
  const notify = b.value(input.notifyPayload);
  const first = b.value(input.events[0].sequence);
  const ready = input.readyRunId !== null ? b.value(input.readyRunId) : 0;
  const noticed = input.notificationPayload !== null ? b.value(input.notificationPayload) : 0;
  const join = input.joinRunId ? b.value(input.joinRunId) : 0;
  return b.finish(`${ready ? 'nr' : 'n'}${noticed ? 'nn' : ''}${join ? 'j' : ''}`, () => {
    const once = (call: string) => `CASE WHEN ev.sequence = $${first}::bigint THEN ${call} END`;
    const n2 = ready ? `, ${once(`pg_notify('run_ready', $${ready}::text)`)} AS n2` : '';
    const n3 = noticed ? `, ${once(`pg_notify('agent_notifications', $${noticed}::text)`)} AS n3` : '';
    const n4 = join ? `, ${once(`pg_notify('run_join', $${join}::text)`)} AS n4` : '';
    return `SELECT ev.id, ev.sequence, ${once(`pg_notify('agent_events', $${notify}::text)`)} AS n1${n2}${n3}${n4} FROM ev ORDER BY ev.sequence`;
  });
}

/**
 * The session row's part, when the batch writes it: it goes first and gates the events (`FROM sw`),
 * so a writer that changes the session holds its row lock before it takes its sequence. Returns what
 * the events' insert selects from. (Were a batch's fold to end where it started, with not even
 * `updated_at` moved, there would be no column to set: the row is then left alone.)
 */
function writeSession(b: StatementBuilder, sessionProjection: Projection, input: AppendStatementInput): string {
  const types = input.columnTypes.get(sessionProjection.table)!;
  const session = input.session;
  const changed = session.kind === 'update' ? changedColumns(sessionProjection, session.row, session.previous) : [];
  if (session.kind === 'create') {
    const cols = sessionProjection.columns;
    const first = b.values.length + 1;
    for (const c of cols) b.value(sqlValue(session.row[c], types.get(c)!));
    b.part(
      'sc',
      () =>
        `sw AS (INSERT INTO sessions (${cols.join(', ')}) VALUES (${cols.map((c, j) => `$${first + j}::${types.get(c)!}`).join(', ')}) RETURNING 1 AS ok)`,
    );
    return 'sw';
  }
  if (session.kind === 'update' && changed.length > 0) {
    const first = b.values.length + 1;
    for (const c of changed) b.value(sqlValue(session.row[c], types.get(c)!));
    const id = b.value(input.sessionId);
    const generation = b.value(input.generation);
    b.part(
      `su:${changed.join(',')}`,
      () =>
        `sw AS (UPDATE sessions s SET ${changed.map((c, j) => `${c} = $${first + j}::${types.get(c)!}`).join(', ')} WHERE s.id = $${id}::uuid AND ${GENERATION_SQL} = $${generation}::bigint RETURNING 1 AS ok)`,
    );
    return 'sw';
  }
  // No session row written: the events' insert checks the generation itself.
  const generation = b.value(input.generation);
  b.key('sn');
  return `(SELECT 1 WHERE ${GENERATION_SQL} = $${generation}::bigint) AS sw`;
}

/**
 * The events, selected from their gate (one row when it held, none otherwise): one typed VALUES row
 * each, inserted in sequence order, so event ids rise with sequence within the batch (the global
 * reader and run listings order by id).
 */
function writeEvents(b: StatementBuilder, events: readonly Record<string, unknown>[], gate: string): void {
  const first = b.values.length + 1;
  for (const e of events) for (const [c, t] of EVENT_ROW_COLUMNS) b.value(sqlValue(e[c], t));
  const n = events.length;
  const names = [...EVENT_ROW_COLUMNS.map(([c]) => c), 'batch_events'];
  const cols = names.join(', ');
  // `batch_events`: the append's size on its first event, 0 on the others; the global order's index
  // keeps only first events (ADR 0058). A literal: the statement's text is already one per size.
  const row = (i: number) =>
    `(${EVENT_ROW_COLUMNS.map(([, t], j) => `$${first + i * EVENT_ROW_COLUMNS.length + j}::${t}`).join(', ')}, ${i === 0 ? n : 0}::smallint)`;
  b.part(
    `e${n}`,
    () =>
      `ev AS (INSERT INTO events (${cols}) SELECT ${names.map((c) => `v.${c}`).join(', ')} FROM ${gate}, (VALUES ${Array.from(
        { length: n },
        (_, i) => row(i),
      ).join(', ')}) AS v(${cols}) ORDER BY v.sequence RETURNING id, sequence)`,
  );
}

/** One row of a keyed or insert-only projection. */
function writeRow(
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
  // replaced.
  const first = b.values.length + 1;
  for (const col of proj.columns) b.value(sqlValue(w.row[col], types.get(col)!));
  b.part(
    `pi:${proj.table}`,
    () =>
      `p${i} AS (INSERT INTO ${proj.table} (${proj.columns.join(', ')}) SELECT ${proj.columns.map((col, j) => `$${first + j}::${types.get(col)!}`).join(', ')} FROM ${gate}${onConflict(proj)})`,
  );
}

/** The batch's checkpoints, in version order. */
function writeCheckpoints(b: StatementBuilder, cps: readonly CheckpointRow[], gate: string): void {
  if (cps.length === 0) return;
  const first = b.values.length + 1;
  for (const c of cps) {
    b.value(c.runId);
    b.value(c.version);
    b.value(JSON.stringify(toStorableText(c.state).value));
    b.value(c.lastSequence);
    b.value(c.createdAt);
  }
  const row = (i: number) => {
    const f = first + i * 5;
    return `$${f}::uuid, $${f + 1}::int, $${f + 2}::jsonb, $${f + 3}::bigint, $${f + 4}::timestamptz`;
  };
  const cols = 'run_id, version, state, last_event_sequence, created_at';
  b.part(`k${cps.length}`, () =>
    cps.length === 1
      ? `ck AS (INSERT INTO checkpoints (${cols}) SELECT ${row(0)} FROM ${gate})`
      : `ck AS (INSERT INTO checkpoints (${cols}) SELECT v.* FROM (VALUES ${cps.map((_, i) => `(${row(i)})`).join(', ')}) AS v(${cols}) WHERE EXISTS (SELECT 1 FROM ev) ORDER BY v.version)`,
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
 * Collects the statement's parts and values in one pass. Each part contributes a key fragment (the
 * shape) and a text builder that is only run when that shape has not been seen yet; placeholders are
 * numbered in the order values were added, which is the same for every statement of one shape.
 */
class StatementBuilder {
  readonly values: unknown[] = [];
  private readonly keys: string[] = [];
  private readonly parts: (() => string)[] = [];

  constructor(private readonly named: boolean) {}

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

  finish(selectKey: string, select: () => string): AppendStatement {
    const build = () => `WITH ${this.parts.map((p) => p()).join(',\n')}\n${select()}`;
    if (!this.named) return { text: build(), name: undefined, values: this.values };
    const key = `${this.keys.join('|')}|${selectKey}`;
    let shape = texts.get(key);
    if (!shape) {
      const text = build();
      shape = { text, name: `agent_append_${createHash('sha1').update(text).digest('hex').slice(0, 16)}` };
      texts.set(key, shape);
    }
    return { text: shape.text, name: shape.name, values: this.values };
  }
}
