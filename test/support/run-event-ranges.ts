import type { Queryable } from '../../src/adapters/postgres/database';
import type { EventStore } from '../../src/ports/event-store';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';

/**
 * Checks the invariant the run reads rely on (ADR 0054): every event of a run lies in the run's
 * session between `runs.first_sequence` and `runs.last_sequence`, and `listRunEvents` (which reads that range, with no
 * index on `run_id`) returns exactly what a full scan of the log by `run_id` finds in the run's session (events in
 * other streams that name the run, such as the memories formed from it, are not the run's events). Returns how many
 * runs were checked.
 */
export async function expectRunEventRanges(db: Queryable, store: EventStore): Promise<number> {
  const outside = await db.query(
    `SELECT e.event_type, e.sequence, r.first_sequence FROM events e JOIN runs r ON r.id = e.run_id
      WHERE e.session_id = r.session_id AND NOT (e.sequence BETWEEN r.first_sequence AND r.last_sequence)`,
  );
  expect(outside.rows).toEqual([]);
  const runs = await db.query<{ id: string; tenant_id: string }>('SELECT id, tenant_id FROM runs ORDER BY created_at');
  for (const { id, tenant_id: tenantId } of runs.rows) {
    const scanned = await db.query<{ sequence: string }>(
      `SELECT e.sequence FROM events e JOIN runs r ON r.id = e.run_id AND r.session_id = e.session_id
        WHERE e.run_id = $1 ORDER BY e.id`,
      [id],
    );
    const read = await store.listRunEvents(id, { ...LOCAL_PRINCIPAL, tenantId });
    expect({ run: id, sequences: read.map((e) => e.sequence) }).toEqual({
      run: id,
      sequences: scanned.rows.map((r) => Number(r.sequence)),
    });
  }
  return runs.rows.length;
}
