import type { PoolClient } from 'pg';
import type { Row } from '../../../domain/projections';
import { SCHEDULED_RUN_PRIORITY } from '../../../domain/schedules/schedule';
import type { Logger } from '../../../ports/logger';
import type {
  Admission,
  DueSchedule,
  OccurrencePlanning,
  RecordedOccurrence,
  ScheduleFiring,
} from '../../../ports/schedules';
import type { Database, PreparedSql } from '../database';
import { GENERATION_SQL } from '../event-store/append-statement';
import type { PgAppender } from '../event-store/pg-appender';
import { lastSequenceSql } from '../event-codec';

/** Per-tenant ceilings checked at every firing (0 / null: off). */
export interface AdmissionCeilings {
  readonly maxActiveRuns: number;
  readonly maxFiringsPerMinute: number;
  readonly dailyCost: string | null;
  readonly monthlyCost: string | null;
}

interface ClaimedRow {
  row: Row;
  session_row: Row | null;
  last_run_status: string | null;
  last_sequence: string;
  generation: string;
}

/**
 * Due schedules, locked so no other scheduler sees them until this transaction ends; a committed
 * occurrence moves `next_fire_at` past `$1`, so the row no longer matches anyone's claim. Prepared
 * once per connection and sent with BEGIN (one round trip).
 */
const CLAIM: PreparedSql = {
  name: 'agent_schedule_claim',
  text: `
  SELECT to_jsonb(s) AS row,
         (SELECT to_jsonb(ss) FROM sessions ss WHERE ss.id = s.id) AS session_row,
         (SELECT r.status FROM runs r WHERE r.id = s.last_run_id) AS last_run_status,
         ${lastSequenceSql('s.id')} AS last_sequence,
         ${GENERATION_SQL}::text AS generation
    FROM schedules s
   WHERE s.status = 'active' AND s.next_fire_at <= $1::timestamptz
   ORDER BY s.next_fire_at
   LIMIT $2::int
     FOR UPDATE OF s SKIP LOCKED`,
};

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/**
 * The scheduler's transaction (ADR 0034): claim due schedules with `FOR UPDATE SKIP LOCKED`, and for
 * each append its occurrence to the schedule's stream (conditional on the stream's sequence) and,
 * when it fires, its dedicated session, first message and queued run — all committed together or
 * not at all. The ledger's `UNIQUE (schedule_id, nominal_at)` refuses a second occurrence of one
 * instant whatever raced, so a crash or a lost race leaves no partial occurrence, session or run.
 */
export class PgScheduleFiring implements ScheduleFiring {
  constructor(
    private readonly db: Database,
    private readonly appender: PgAppender,
    private readonly planner: OccurrencePlanning,
    private readonly ceilings: AdmissionCeilings,
    private readonly log: Logger,
  ) {}

  async fireDue(now: string, limit: number): Promise<RecordedOccurrence[]> {
    if (!ISO_INSTANT.test(now) || !Number.isSafeInteger(limit) || limit < 1)
      throw new Error(`invalid claim (${now}, ${limit})`);
    try {
      return await this.fireBatch(now, limit);
    } catch (e) {
      if (limit === 1) throw e;
      // One schedule's failure must not hold the others back: retry one per transaction.
      this.log.warn('scheduler batch failed; firing one schedule per transaction', { error: String(e) });
      const fired: RecordedOccurrence[] = [];
      for (let i = 0; i < limit; i++) {
        try {
          const one = await this.fireBatch(now, 1);
          if (one.length === 0) break;
          fired.push(...one);
        } catch (err) {
          this.log.error('a due schedule could not be recorded; it stays due', { error: String(err) });
          break;
        }
      }
      return fired;
    }
  }

  private fireBatch(now: string, limit: number): Promise<RecordedOccurrence[]> {
    return this.db.transactionFromPrepared<RecordedOccurrence[], ClaimedRow>(
      CLAIM,
      [`'${now}'`, String(limit)],
      (client, claim) => this.fireIn(client, claim.rows, now),
    );
  }

  async nextDueAt(): Promise<string | null> {
    const r = await this.db.query<{ at: Date | null }>(
      `SELECT min(next_fire_at) AS at FROM schedules WHERE status = 'active'`,
    );
    const at = r.rows[0]?.at;
    return at ? new Date(at).toISOString() : null;
  }

  private async fireIn(client: PoolClient, claimed: readonly ClaimedRow[], now: string): Promise<RecordedOccurrence[]> {
    const admission = this.admission(client, now);
    const recorded: RecordedOccurrence[] = [];
    for (const c of claimed) {
      const due: DueSchedule = { row: c.row, lastRunStatus: c.last_run_status, lastSequence: Number(c.last_sequence) };
      const planned = await this.planner.plan(due, now, admission.check);
      const rows = new Map([
        ['schedules', [c.row]],
        ['sessions', c.session_row ? [c.session_row] : []],
      ]);
      await this.appender.appendIn(
        client,
        {
          sessionId: planned.scheduleId,
          tenantId: planned.tenantId,
          events: planned.streamEvents,
          expectedSequence: planned.expectedSequence,
        },
        c.session_row ? { generation: c.generation, lastSequence: due.lastSequence, rows } : undefined,
      );
      if (planned.session) {
        // A new session and run: nothing of them exists yet, so the append reads nothing first.
        await this.appender.appendIn(
          client,
          { sessionId: planned.session.sessionId, tenantId: planned.tenantId, events: planned.session.events },
          { generation: c.generation, lastSequence: 0, rows: new Map(), complete: true },
        );
        admission.fired(planned.tenantId);
      }
      recorded.push({ scheduleId: planned.scheduleId, nominalAt: planned.nominalAt, fired: planned.session !== null });
    }
    return recorded;
  }

  /** Tenant admission for one transaction: counts read once per tenant, plus what this batch fired. */
  private admission(client: PoolClient, now: string): { check: Admission; fired(tenantId: string): void } {
    const c = this.ceilings;
    const base = new Map<string, Promise<{ active: number; lastMinute: number; day: string; month: string }>>();
    const added = new Map<string, number>();
    const check: Admission = async (tenantId) => {
      if (c.maxActiveRuns === 0 && c.maxFiringsPerMinute === 0 && c.dailyCost === null && c.monthlyCost === null)
        return null;
      if (!base.has(tenantId)) base.set(tenantId, tenantCounts(client, tenantId, now));
      const counts = await base.get(tenantId)!;
      const plus = added.get(tenantId) ?? 0;
      if (c.maxActiveRuns > 0 && counts.active + plus >= c.maxActiveRuns)
        return {
          reason: 'tenant_concurrency',
          message: `the tenant has ${counts.active + plus} active scheduled runs (ceiling ${c.maxActiveRuns})`,
        };
      if (c.maxFiringsPerMinute > 0 && counts.lastMinute + plus >= c.maxFiringsPerMinute)
        return {
          reason: 'tenant_rate',
          message: `the tenant fired ${counts.lastMinute + plus} occurrences in the last minute (ceiling ${c.maxFiringsPerMinute})`,
        };
      if (c.dailyCost !== null && Number(counts.day) >= Number(c.dailyCost))
        return {
          reason: 'tenant_daily_cost',
          message: `scheduled runs cost ${counts.day} today (ceiling ${c.dailyCost})`,
        };
      if (c.monthlyCost !== null && Number(counts.month) >= Number(c.monthlyCost))
        return {
          reason: 'tenant_monthly_cost',
          message: `scheduled runs cost ${counts.month} this month (ceiling ${c.monthlyCost})`,
        };
      return null;
    };
    return { check, fired: (tenantId) => added.set(tenantId, (added.get(tenantId) ?? 0) + 1) };
  }
}

/** A tenant's scheduled runs now: active ones, firings in the last minute, cost today and this month (UTC). */
async function tenantCounts(
  client: PoolClient,
  tenantId: string,
  now: string,
): Promise<{ active: number; lastMinute: number; day: string; month: string }> {
  const r = await client.query<{ active: string; last_minute: string; day: string; month: string }>(
    `SELECT
       (SELECT count(*) FROM runs WHERE tenant_id = $1 AND priority = $3
           AND status NOT IN ('completed', 'failed', 'cancelled')) AS active,
       (SELECT count(*) FROM schedule_occurrences WHERE tenant_id = $1 AND status = 'fired'
           AND fired_at > $2::timestamptz - interval '1 minute') AS last_minute,
       (SELECT coalesce(sum((usage->>'cost')::numeric), 0) FROM runs WHERE tenant_id = $1 AND priority = $3
           AND created_at >= date_trunc('day', $2::timestamptz, 'UTC')) AS day,
       (SELECT coalesce(sum((usage->>'cost')::numeric), 0) FROM runs WHERE tenant_id = $1 AND priority = $3
           AND created_at >= date_trunc('month', $2::timestamptz, 'UTC')) AS month`,
    [tenantId, now, SCHEDULED_RUN_PRIORITY],
  );
  const row = r.rows[0];
  return { active: Number(row.active), lastMinute: Number(row.last_minute), day: row.day, month: row.month };
}
