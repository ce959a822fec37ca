import type { Queryable } from '../../src/adapters/postgres/database';
import type { EventStore } from '../../src/ports/event-store';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';

/**
 * Checks the invariant the run reads rely on (ADR 0054): every event of a run lies in the run's
 * session at or after `runs.first_sequence`, and `listRunEvents` (which reads that range, with no
 * index on `run_id`) returns exactly what a full scan of the log by `run_id` finds. Returns how many
 * runs were checked.
 */
export async function expectRunEventRanges(db: Queryable, store: EventStore): Promise<number> {
  const outside = await db.query(
    `SELECT e.event_type, e.sequence, r.first_sequence FROM events e JOIN runs r ON r.id = e.run_id
      WHERE e.session_id <> r.session_id OR r.first_sequence IS NULL OR e.sequence < r.first_sequence`,
  );
  expect(outside.rows).toEqual([]);
  const runs = await db.query<{ id: string }>('SELECT id FROM runs ORDER BY created_at');
  for (const { id } of runs.rows) {
    const scanned = await db.query<{ sequence: string }>('SELECT sequence FROM events WHERE run_id = $1 ORDER BY id', [
      id,
    ]);
    const read = await store.listRunEvents(id, LOCAL_PRINCIPAL);
    expect({ run: id, sequences: read.map((e) => e.sequence) }).toEqual({
      run: id,
      sequences: scanned.rows.map((r) => Number(r.sequence)),
    });
  }
  return runs.rows.length;
}
