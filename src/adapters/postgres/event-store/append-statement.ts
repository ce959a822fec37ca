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

export function buildAppendStatement(
  sessionProjection: Projection,
  input: AppendStatementInput,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const p = (v: unknown): string => {
    values.push(v);
    return `$${values.length}`;
  };
  const ctes: string[] = [];
  const sessCols = sessionProjection.columns;
  const sessRow = p(JSON.stringify(input.sessionRow));
  if (input.expectedSequence === null) {
    ctes.push(
      `seq AS (INSERT INTO sessions (${sessCols.join(', ')}) SELECT ${sessCols.join(', ')} FROM jsonb_populate_record(NULL::sessions, ${sessRow}::jsonb) RETURNING 1 AS ok)`,
    );
  } else {
    ctes.push(
      `seq AS (UPDATE sessions s SET (${sessCols.join(', ')}) = (SELECT ${sessCols.map((c) => `r.${c}`).join(', ')} FROM jsonb_populate_record(NULL::sessions, ${sessRow}::jsonb) r) WHERE s.id = ${p(input.sessionId)} AND s.next_event_sequence = ${p(input.expectedSequence)} AND coalesce((SELECT max(rebuilt_at)::text FROM projection_watermarks), '') = ${p(input.generation)} RETURNING 1 AS ok)`,
    );
  }
  ctes.push(`ev AS (
    INSERT INTO events (session_id, run_id, sequence, event_type, payload_schema_version, payload, actor_type, actor_id, tenant_id, trace_id, created_at)
    SELECT e.session_id, e.run_id, e.sequence, e.event_type, e.payload_schema_version, e.payload, e.actor_type, e.actor_id, e.tenant_id, e.trace_id, e.created_at
    FROM jsonb_to_recordset(${p(JSON.stringify(input.events))}::jsonb) AS e(session_id uuid, run_id uuid, sequence bigint, event_type text,
      payload_schema_version integer, payload jsonb, actor_type text, actor_id text, tenant_id text, trace_id text, created_at timestamptz)
    WHERE EXISTS (SELECT 1 FROM seq)
    ORDER BY e.sequence
    RETURNING id, sequence)`);
  let n = 0;
  for (const [proj, rows] of input.projectionRows) {
    if (proj === sessionProjection || rows.length === 0) continue;
    const cols = proj.columns.join(', ');
    const conflict =
      proj.keyColumn === null
        ? ''
        : ` ON CONFLICT (${proj.keyColumn}) DO UPDATE SET ${proj.columns
            .filter((c) => c !== proj.keyColumn)
            .map((c) => `${c} = EXCLUDED.${c}`)
            .join(', ')}`;
    ctes.push(
      `p${n++} AS (INSERT INTO ${proj.table} (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${proj.table}, ${p(JSON.stringify(rows))}::jsonb) WHERE EXISTS (SELECT 1 FROM seq)${conflict})`,
    );
  }
  if (input.checkpoint) {
    const c = input.checkpoint;
    ctes.push(
      `ck AS (INSERT INTO checkpoints (run_id, version, state, last_event_sequence, created_at) SELECT ${p(c.runId)}::uuid, ${p(c.version)}::int, ${p(JSON.stringify(c.state))}::jsonb, ${p(c.lastSequence)}::bigint, ${p(c.createdAt)}::timestamptz WHERE EXISTS (SELECT 1 FROM seq))`,
    );
  }
  const notify = input.notifyInStatement
    ? `, CASE WHEN EXISTS (SELECT 1 FROM seq) THEN pg_notify('agent_events', ${p(input.notifyPayload)}) END AS n1`
    : '';
  const ready =
    input.notifyInStatement && input.readyRunId
      ? `, CASE WHEN EXISTS (SELECT 1 FROM seq) THEN pg_notify('run_ready', ${p(input.readyRunId)}) END AS n2`
      : '';
  const text = `WITH ${ctes.join(',\n')}
SELECT (SELECT count(*) FROM seq)::int AS ok,
       (SELECT coalesce(json_agg(json_build_object('id', id, 'sequence', sequence) ORDER BY sequence), '[]'::json) FROM ev) AS ids${notify}${ready}`;
  return { text, values };
}
