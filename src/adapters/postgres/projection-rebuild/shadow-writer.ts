import type { Row } from '../../../domain/projections';
import type { Queryable } from '../database';
import type { RebuildTarget } from './rebuild-target';
import type { FoldedSession } from './session-folder';
import { PROGRESS_TABLE } from './shadow-tables';
import { columnList, ident } from './sql';

/**
 * Buffers folded sessions and bulk-inserts them into the shadow tables, with the per-session
 * progress, in one statement per flush (the same `jsonb_populate_recordset(NULL::<table>, …)` the
 * append uses, so values are coerced exactly as inline). With `overlap`, a flush runs while the
 * caller keeps folding (it must then be on its own connection); at most one flush is in flight,
 * which bounds memory to about two buffers.
 */
export class ShadowWriter {
  private buffers: Row[][];
  private sessionIds: string[] = [];
  private lastSequences: number[] = [];
  private buffered = 0;
  private inFlight: Promise<void> | null = null;
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly q: Queryable,
    private readonly targets: readonly RebuildTarget[],
    private readonly flushRows: number,
    private readonly overlap: boolean,
  ) {
    this.buffers = targets.map(() => []);
  }

  add(session: FoldedSession): void {
    for (let i = 0; i < session.rows.length; i++) {
      const rows = session.rows[i];
      const buffer = this.buffers[i];
      for (const row of rows) buffer.push(row);
      this.buffered += rows.length;
    }
    this.sessionIds.push(session.sessionId);
    this.lastSequences.push(session.lastSequence);
    this.buffered += 1;
  }

  /** Starts a flush once enough is buffered; waits only for the previous flush. */
  async maybeFlush(): Promise<void> {
    if (this.buffered < this.flushRows) return;
    await this.settle();
    const batch = this.take();
    if (this.overlap) {
      // Keep the rejection handled now; it is rethrown by the next settle().
      this.inFlight = this.write(batch).catch((error: unknown) => {
        this.failure = { error };
      });
    } else {
      await this.write(batch);
    }
  }

  /** Writes whatever is buffered and waits for every flush. */
  async close(): Promise<void> {
    await this.settle();
    if (this.buffered > 0) await this.write(this.take());
  }

  private async settle(): Promise<void> {
    if (this.inFlight) await this.inFlight;
    this.inFlight = null;
    if (this.failure) throw this.failure.error;
  }

  private take(): { rows: Row[][]; sessionIds: string[]; lastSequences: number[] } {
    const batch = { rows: this.buffers, sessionIds: this.sessionIds, lastSequences: this.lastSequences };
    this.buffers = this.targets.map(() => []);
    this.sessionIds = [];
    this.lastSequences = [];
    this.buffered = 0;
    return batch;
  }

  private async write(batch: { rows: Row[][]; sessionIds: string[]; lastSequences: number[] }): Promise<void> {
    const values: unknown[] = [batch.sessionIds, batch.lastSequences];
    const ctes = [
      `progress AS (INSERT INTO ${ident(PROGRESS_TABLE)} (session_id, last_sequence) SELECT * FROM unnest($1::uuid[], $2::bigint[])
         ON CONFLICT (session_id) DO UPDATE SET last_sequence = EXCLUDED.last_sequence)`,
    ];
    this.targets.forEach((t, i) => {
      const rows = batch.rows[i];
      if (rows.length === 0) return;
      values.push(JSON.stringify(rows));
      const cols = columnList(t.projection.columns);
      ctes.push(
        `s${i} AS (INSERT INTO ${ident(t.shadow)} (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${ident(t.live)}, $${values.length}::jsonb))`,
      );
    });
    await this.q.query(`WITH ${ctes.join(',\n')} SELECT 1`, values);
  }
}
