import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Revision 12 (ADR 0014, session 10): the events row is the append's sequence gate.
 *
 * `sessions.next_event_sequence` was the gate: every append updated the session row
 * (`... WHERE next_event_sequence = $last`) even when nothing else on it changed, which was 11 of the
 * 15 events of an ordinary run. The append now inserts its events with a plain INSERT whose
 * `UNIQUE (session_id, sequence)` refuses a writer that lost the race (the unique violation is its
 * ConcurrencyConflict), and writes the session row only when the session's own state changes
 * (sessions projection v3). The column would no longer say anything true, so it goes; the last
 * sequence of a session is `max(sequence)` of its events (an index probe of
 * `events_session_sequence_key`). Down restores the column from the log.
 */
export class EventsRowGate1764800100000 implements MigrationInterface {
  name = 'EventsRowGate1764800100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions DROP COLUMN next_event_sequence`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN next_event_sequence bigint NOT NULL DEFAULT 0`);
    await q.query(
      `UPDATE sessions s SET next_event_sequence = coalesce((SELECT max(e.sequence) FROM events e WHERE e.session_id = s.id), 0)`,
    );
  }
}
