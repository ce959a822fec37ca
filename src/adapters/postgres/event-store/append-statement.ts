import { createHash } from 'node:crypto';
import type { Projection, Row } from '../../../domain/projections';

/**
 * Builds the single SQL statement that appends a batch atomically: it advances the session's
 * sequence only if it is still `expected` (optimistic concurrency, gated so nothing else is written
 * otherwise), inserts the events, upserts every touched projection row, writes the optional
 * checkpoint. One statement = one round trip and one implicit transaction. The NOTIFY is sent by the
 * store after the commit (see BatchedNotifier), or inside the statement when the append runs in a
 * caller's transaction, so it is delivered at that transaction's commit.
 */
export interface AppendStatementInput {
  readonly sessionId: string;
  /** null when the batch creates the session (first event is session.created). */
  readonly expectedSequence: number | null;
  /** The read-model generation the rows were read at (see GENERATION_SQL). */
  readonly generation: string;
  readonly sessionRow: Row;
  readonly events: readonly Record<string, unknown>[];
  readonly projectionRows: ReadonlyMap<Projection, Row[]>;
  readonly checkpoint: {
    runId: string;
    version: number;
    state: unknown;
    lastSequence: number;
    createdAt: string;
  } | null;
  readonly notifyPayload: string;
  readonly readyRunId: string | null;
  /**
   * Put the NOTIFYs inside the statement (delivered at the caller's commit). Used only when the
   * append runs inside a caller's transaction; otherwise the store notifies after commit.
   */
  readonly notifyInStatement: boolean;
}

/** Statement texts by shape: the text depends only on which parts are present, never on the values. */
const texts = new Map<string, { text: string; name: string }>();

/**
 * The statement for `input`: its values, and its text and prepared-statement name, which are built
 * once per shape (creating or not, the projections touched, checkpoint, in-statement notifications)
 * and reused, so an append does not rebuild and rehash a long SQL text.
 */
export function buildAppendStatement(
  sessionProjection: Projection,
  input: AppendStatementInput,
): { text: string; name: string; values: unknown[] } {
  const creating = input.expectedSequence === null;
  const values: unknown[] = [JSON.stringify(input.sessionRow)];
  if (!creating) values.push(input.sessionId, input.expectedSequence, input.generation);
  values.push(JSON.stringify(input.events));
  const written: Projection[] = [];
  for (const [proj, rows] of input.projectionRows) {
    if (proj === sessionProjection || rows.length === 0) continue;
    written.push(proj);
    values.push(JSON.stringify(rows));
  }
  const c = input.checkpoint;
  if (c) values.push(c.runId, c.version, JSON.stringify(c.state), c.lastSequence, c.createdAt);
  const notify = input.notifyInStatement;
  const ready = notify && input.readyRunId !== null;
  if (notify) values.push(input.notifyPayload);
  if (ready) values.push(input.readyRunId);
  const key = `${creating ? 'c' : 'u'}|${written.map((x) => x.name).join(',')}|${c ? 'k' : ''}|${notify ? 'n' : ''}${ready ? 'r' : ''}`;
  let shape = texts.get(key);
  if (!shape) {
    const text = appendText(sessionProjection, creating, written, c !== null, notify, ready);
    shape = { text, name: `agent_append_${createHash('sha1').update(text).digest('hex').slice(0, 16)}` };
    texts.set(key, shape);
  }
  return { text: shape.text, name: shape.name, values };
}

/** The SQL text of one statement shape; its placeholders follow the order `buildAppendStatement` pushes values. */
function appendText(
  sessionProjection: Projection,
  creating: boolean,
  written: readonly Projection[],
  checkpoint: boolean,
  notifyInStatement: boolean,
  ready: boolean,
): string {
  let n = 0;
  const p = (): string => `$${++n}`;
  const ctes: string[] = [];
  const sessCols = sessionProjection.columns;
  const sessRow = p();
  if (creating) {
    ctes.push(
      `seq AS (INSERT INTO sessions (${sessCols.join(', ')}) SELECT ${sessCols.join(', ')} FROM jsonb_populate_record(NULL::sessions, ${sessRow}::jsonb) RETURNING 1 AS ok)`,
    );
  } else {
    ctes.push(
      `seq AS (UPDATE sessions s SET (${sessCols.join(', ')}) = (SELECT ${sessCols.map((c) => `r.${c}`).join(', ')} FROM jsonb_populate_record(NULL::sessions, ${sessRow}::jsonb) r) WHERE s.id = ${p()} AND s.next_event_sequence = ${p()} AND coalesce((SELECT max(rebuilt_at)::text FROM projection_watermarks), '') = ${p()} RETURNING 1 AS ok)`,
    );
  }
  ctes.push(`ev AS (
    INSERT INTO events (session_id, run_id, sequence, event_type, payload_schema_version, payload, actor_type, actor_id, tenant_id, trace_id, created_at)
    SELECT e.session_id, e.run_id, e.sequence, e.event_type, e.payload_schema_version, e.payload, e.actor_type, e.actor_id, e.tenant_id, e.trace_id, e.created_at
    FROM jsonb_to_recordset(${p()}::jsonb) AS e(session_id uuid, run_id uuid, sequence bigint, event_type text,
      payload_schema_version integer, payload jsonb, actor_type text, actor_id text, tenant_id text, trace_id text, created_at timestamptz)
    WHERE EXISTS (SELECT 1 FROM seq)
    ORDER BY e.sequence
    RETURNING id, sequence)`);
  written.forEach((proj, i) => {
    const cols = proj.columns.join(', ');
    const conflict =
      proj.keyColumn === null
        ? ''
        : ` ON CONFLICT (${proj.keyColumn}) DO UPDATE SET ${proj.columns
            .filter((c) => c !== proj.keyColumn)
            .map((c) => `${c} = EXCLUDED.${c}`)
            .join(', ')}`;
    ctes.push(
      `p${i} AS (INSERT INTO ${proj.table} (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${proj.table}, ${p()}::jsonb) WHERE EXISTS (SELECT 1 FROM seq)${conflict})`,
    );
  });
  if (checkpoint) {
    ctes.push(
      `ck AS (INSERT INTO checkpoints (run_id, version, state, last_event_sequence, created_at) SELECT ${p()}::uuid, ${p()}::int, ${p()}::jsonb, ${p()}::bigint, ${p()}::timestamptz WHERE EXISTS (SELECT 1 FROM seq))`,
    );
  }
  const notify = notifyInStatement
    ? `, CASE WHEN EXISTS (SELECT 1 FROM seq) THEN pg_notify('agent_events', ${p()}) END AS n1`
    : '';
  const readyNotify = ready
    ? `, CASE WHEN EXISTS (SELECT 1 FROM seq) THEN pg_notify('run_ready', ${p()}) END AS n2`
    : '';
  return `WITH ${ctes.join(',\n')}
SELECT (SELECT count(*) FROM seq)::int AS ok,
       (SELECT coalesce(json_agg(json_build_object('id', id, 'sequence', sequence) ORDER BY sequence), '[]'::json) FROM ev) AS ids${notify}${readyNotify}`;
}
