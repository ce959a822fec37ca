import type { PoolClient } from 'pg';
import { ConflictError } from '../../../domain/errors';
import { pgError } from '../database';
import { catchUp } from './catch-up';
import { collectChangedKeys, describeDifferences } from './diff';
import type { ProgressMeter } from './progress-meter';
import type { RebuildTarget } from './rebuild-target';
import { recordWatermarks, replaceLiveRows } from './repair';
import { ident } from './sql';
import type { ProjectionReport } from './types';

/** Differing rows described per projection; the rest are only counted. */
export const DIFFERENCES_SHOWN = 20;
/**
 * How long to wait for writers to drain. While we wait in the lock queue, new appends queue behind
 * us, so the wait must stay short; on timeout or deadlock the whole transaction is retried.
 */
const LOCK_TIMEOUT = '5s';
const LOCK_ATTEMPTS = 5;

export interface LockedOutcome {
  readonly projections: ProjectionReport[];
  /** Events folded by the catch-up of the attempt that committed. */
  readonly events: number;
}

/**
 * The short exclusive part: pauses appends (SHARE ROW EXCLUSIVE on `events` conflicts with the
 * ROW EXCLUSIVE every append takes on it to insert its events; plain reads, the global reader's
 * included, are not blocked), catches the shadow tables up
 * with the last appends, compares the rows that can differ (the candidates of the full comparison
 * made just before, plus the sessions caught up), and in repair mode replaces the differing live
 * rows and records watermarks, all in one transaction. Deadlocks and lock timeouts (a worker holding
 * a run row while waiting to append) roll back and retry; everything done here is idempotent.
 */
export async function finishUnderLock(
  client: PoolClient,
  targets: readonly RebuildTarget[],
  opts: { verify: boolean; batchSize: number; meter: ProgressMeter },
): Promise<LockedOutcome> {
  for (let attempt = 1; ; attempt++) {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      opts.meter.report('lock');
      await client.query('LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE');
      const caught = await catchUp(client, targets, opts.batchSize, (n) => opts.meter.advance('catch-up', n));
      opts.meter.report(opts.verify ? 'verify' : 'swap');
      const projections: ProjectionReport[] = [];
      for (const t of targets) {
        const count = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ident(t.shadow)}`);
        const differingRows = await collectChangedKeys(client, t, caught.sessionIds);
        const differences = differingRows > 0 ? await describeDifferences(client, t, DIFFERENCES_SHOWN) : [];
        if (!opts.verify && differingRows > 0) await replaceLiveRows(client, t);
        projections.push({ name: t.projection.name, rows: Number(count.rows[0].n), differingRows, differences });
      }
      const rebuilt = targets.map((t) => t.projection);
      if (!opts.verify) await recordWatermarks(client, rebuilt);
      await client.query('COMMIT');
      return { projections, events: caught.events };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      const code = pgError(e).code;
      const retryable = code === '40P01' || code === '55P03';
      if (!retryable) throw e;
      if (attempt >= LOCK_ATTEMPTS) {
        throw new ConflictError(
          `could not pause writers to finish the rebuild (${code === '40P01' ? 'deadlock' : `lock wait over ${LOCK_TIMEOUT}`}, ${attempt} attempts); a long transaction is holding events or projection rows`,
          { attempts: attempt, sqlState: code },
          { cause: e },
        );
      }
      await new Promise((r) => setTimeout(r, 100 * attempt + Math.floor(Math.random() * 100)));
    }
  }
}
