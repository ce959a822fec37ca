import type { Queryable } from '../database';

/** What an erased statement becomes wherever it was quoted. */
export const ERASED_TEXT = '[forgotten memory]';

/** A PostgreSQL regular expression matching `text` literally. */
export function literalPattern(text: string): string {
  return text.replace(/[\\.^$|?*+()[\]{}]/g, '\\$&');
}

/** The statement as it appears inside a JSON string (what `payload::text` shows). */
export function jsonEscaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

interface TextColumn {
  readonly name: string;
  readonly json: boolean;
}

interface ErasableTable {
  readonly table: string;
  /** SQL that limits the rows to the affected sessions ($1: their ids). */
  readonly scope: string;
  readonly columns: readonly TextColumn[];
}

/** How a table's rows are tied to a session, when they are; tables tied to none are left alone. */
function scopeOf(table: string, columns: ReadonlySet<string>): string | null {
  if (table === 'sessions') return 'id = ANY($1::uuid[])';
  if (table === 'memory_records') return 'stream_session_id = ANY($1::uuid[])';
  if (columns.has('session_id')) return 'session_id = ANY($1::uuid[])';
  if (columns.has('run_id')) return 'run_id IN (SELECT id FROM runs WHERE session_id = ANY($1::uuid[]))';
  return null;
}

/**
 * Every table of the schema that can quote a session's text: its text and JSON columns (not ids,
 * not generated ones) and how its rows are tied to sessions. Read from the catalog, so a table a
 * later migration adds is covered without a change here.
 */
export async function erasableTables(q: Queryable): Promise<ErasableTable[]> {
  const rows = (
    await q.query<{ table_name: string; column_name: string; data_type: string; is_generated: string }>(
      `SELECT c.table_name, c.column_name, c.data_type, c.is_generated
         FROM information_schema.columns c JOIN information_schema.tables t
           ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
          AND c.table_name NOT LIKE '%\\_\\_rebuild' AND c.table_name <> 'typeorm_migrations'
        ORDER BY c.table_name, c.ordinal_position`,
    )
  ).rows;
  const byTable = new Map<string, typeof rows>();
  for (const r of rows) byTable.set(r.table_name, [...(byTable.get(r.table_name) ?? []), r]);
  const out: ErasableTable[] = [];
  for (const [table, cols] of byTable) {
    const scope = scopeOf(table, new Set(cols.map((c) => c.column_name)));
    if (!scope) continue;
    const columns = cols
      .filter((c) => ['text', 'character varying', 'jsonb', 'json'].includes(c.data_type))
      .filter((c) => c.is_generated !== 'ALWAYS' && !/(^|_)id$/.test(c.column_name) && !VOCABULARY.has(c.column_name))
      .map((c) => ({ name: c.column_name, json: c.data_type === 'jsonb' || c.data_type === 'json' }));
    if (columns.length > 0) out.push({ table, scope, columns });
  }
  return out;
}

/** Vocabulary columns (statuses, kinds, types): they hold a closed set of words, never quoted text. */
const VOCABULARY = new Set([
  'status',
  'kind',
  'purpose',
  'event_type',
  'actor_type',
  'method',
  'scope',
  'trust',
  'sensitivity',
  'action_kind',
  'risk',
  'media_type',
  'side_effect',
  'idempotency_class',
  'provider',
  'model',
  'stop_reason',
  'cost_source',
  'sha256',
]);

const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/**
 * Replaces every occurrence of `statement` (case-insensitive) in the rows of `sessions`' events and
 * read models with ERASED_TEXT. Runs inside the caller's transaction; returns rows changed per table.
 */
export async function eraseStatement(
  q: Queryable,
  tables: readonly ErasableTable[],
  sessionIds: readonly string[],
  statement: string,
): Promise<Record<string, number>> {
  const raw = literalPattern(statement);
  const json = literalPattern(jsonEscaped(statement));
  const changed: Record<string, number> = {};
  for (const t of tables) {
    // $1 the sessions, $2 the replacement, then the patterns this table's columns need.
    const values: unknown[] = [sessionIds, ERASED_TEXT];
    const slot = new Map<boolean, string>();
    const pattern = (c: TextColumn): string => {
      if (!slot.has(c.json)) {
        values.push(c.json ? json : raw);
        slot.set(c.json, `$${values.length}::text`);
      }
      return slot.get(c.json)!;
    };
    const sets = t.columns.map((c) => {
      const col = ident(c.name);
      const cast = c.json ? '::jsonb' : '';
      return `${col} = CASE WHEN ${col}::text ~* ${pattern(c)} THEN regexp_replace(${col}::text, ${pattern(c)}, $2::text, 'gi')${cast} ELSE ${col} END`;
    });
    const any = t.columns.map((c) => `${ident(c.name)}::text ~* ${pattern(c)}`).join(' OR ');
    const r = await q.query(`UPDATE ${ident(t.table)} SET ${sets.join(', ')} WHERE ${t.scope} AND (${any})`, values);
    if (r.rowCount) changed[t.table] = r.rowCount;
  }
  return changed;
}

/**
 * Nulls the subject and statement of a deleted memory's own events (`memory.recorded`,
 * `memory.updated`) in its stream: the log keeps that the memory existed and was deleted, not what it said.
 */
export async function eraseMemoryEvents(q: Queryable, streamId: string, memoryId: string): Promise<number> {
  const r = await q.query(
    `UPDATE events SET payload = payload
        || CASE WHEN payload ? 'subject' THEN '{"subject": null}'::jsonb ELSE '{}'::jsonb END
        || CASE WHEN payload ? 'statement' THEN '{"statement": null}'::jsonb ELSE '{}'::jsonb END
      WHERE session_id = $1 AND event_type IN ('memory.recorded', 'memory.updated') AND payload->>'memoryId' = $2`,
    [streamId, memoryId],
  );
  return r.rowCount ?? 0;
}
