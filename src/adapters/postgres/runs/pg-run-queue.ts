import type { Clock } from '../../../ports/clock';
import type { RunQueue } from '../../../ports/run-store';
import type { RunClaim, TraceRef } from '../../../domain/run/run';
import type { NewEvent, StoredEvent } from '../../../domain/events/payloads';
import { eventsOrThrow } from '../../../domain/deciders/decider';
import { runDecider, runStateOf, type ClaimRun } from '../../../domain/deciders/run';
import type { RunStatus } from '../../../domain/run/status';
import { ConcurrencyConflict } from '../../../domain/errors';
import { committed, type Database, type PreparedSql, type Queryable } from '../database';
import type { Row } from '../../../domain/projections';
import type { PgAppender, PrereadState } from '../event-store/pg-appender';
import { GENERATION_SQL } from '../event-store/append-statement';
import { runProjection } from '../../../domain/projections/run-projection';
import type { CheckpointState } from '../../../domain/run/checkpoint';
import type { McpServerGrant } from '../../../domain/mcp-grants';
import { UUID_PATTERN } from '../keyset-cursor';
import { toRunRecord } from '../../../domain/projections/run-record';
import { decodeEvent, RUN_EVENTS_JOIN, type EventRow } from '../event-codec';

/**
 * How many of the session's latest events the claim's statement returns with the run (ClaimPreload
 * .sessionTail): a new session's whole log before its first run (created, message, queued), or what
 * other writers added since this process's fold of the session (the next message and its run).
 */
export const CLAIM_TAIL_EVENTS = 8;

/** A run reclaimed more often than this is failed instead of crashing workers forever. */
export const MAX_RUN_ATTEMPTS = 5;

/**
 * The PostgreSQL run queue: `FOR UPDATE SKIP LOCKED` claim in priority order, a lease whose expiry
 * is an operational column, and `lease_epoch` fencing carried by the `run.claimed` event.
 */
export class PgRunQueue implements RunQueue {
  constructor(
    private readonly db: Database,
    private readonly appender: PgAppender,
    private readonly clock: Clock,
  ) {}

  async claim(
    workerId: string,
    leaseMs: number,
    onlyRunId?: string,
    trace?: TraceRef | null,
  ): Promise<RunClaim | null> {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        return await this.tryClaim(workerId, leaseMs, onlyRunId ?? null, trace ?? null);
      } catch (e) {
        if (!(e instanceof ConcurrencyConflict)) throw e;
      }
    }
    return null;
  }

  /**
   * One transaction of two or three round trips: `BEGIN` and one prepared statement, sent
   * together, that locks the next runnable run, sets its lease and returns everything the claim
   * and the lease's start need — the run and session rows the `run.claimed` append folds (so the append reads
   * nothing), the read-model generation, the principal's trajectory consent (first start only), the
   * run's latest checkpoint, the sequence of its first event, whether it has tool invocations, and
   * its agent's operator MCP grants, and the session's last events;
   * then the append and COMMIT (pipelined, one round trip for a queued run, `PgAppender.appendAndCommit`). The
   * lease column is operational: the append never writes it.
   * What the statement read of the run and session is exact at the commit: the append's
   * sequence gate refuses the claim if the session moved since (a zombie lease holder's last
   * write), and checkpoints are only written by appends. The grants are as of the statement, which
   * is what the lease's start read right after the claim before (a grant applies from the next
   * lease, ADR 0020).
   */
  private tryClaim(
    workerId: string,
    leaseMs: number,
    onlyRunId: string | null,
    proposedTrace: TraceRef | null,
  ): Promise<RunClaim | null> {
    // The statement's arguments are inlined as literals (it shares its round trip with BEGIN):
    // validated first.
    if (onlyRunId !== null && !UUID_PATTERN.test(onlyRunId)) return Promise.resolve(null);
    const lease = Math.max(1, Math.floor(leaseMs));
    if (!Number.isSafeInteger(lease) || lease > 2_147_483_647) throw new Error(`invalid lease duration ${leaseMs}`);
    const args = onlyRunId === null ? [String(lease)] : [String(lease), `'${onlyRunId}'`];
    const statement = onlyRunId === null ? CLAIM_NEXT : CLAIM_ONE;
    return this.db.transactionFromPrepared<RunClaim | null, ClaimRow>(statement, args, async (client, res) => {
      const row = res.rows[0];
      if (!row) return null;
      const preread: PrereadState | undefined = row.session_row
        ? {
            generation: row.generation,
            // The tail's newest event is the session's last (an empty tail: none yet).
            lastSequence: Number(row.session_tail[row.session_tail.length - 1]?.sequence ?? 0),
            rows: new Map([
              ['runs', [row.run_row]],
              ['sessions', [row.session_row]],
            ]),
          }
        : undefined;
      const leaseEpoch = Number(row.lease_epoch) + 1;
      const attempt = row.attempts + 1;
      if (attempt > MAX_RUN_ATTEMPTS) {
        const failed = claimDecision(row, { workerId, leaseEpoch, attempt, deadlineAt: null, trace: null });
        await this.appender.appendIn(
          client,
          { sessionId: row.session_id, tenantId: row.tenant_id, events: failed },
          preread,
        );
        return null;
      }
      // The run's trace root: the first traced attempt's, kept by every later one (ADR 0015).
      // A run started before (its attempts count again from 0 after a resume) has one stored.
      const trace = (row.started_at !== null ? await storedTraceRoot(client, row.id) : null) ?? proposedTrace;
      // A queued run's claim ends with its append and COMMIT in one round trip. A sequence taken
      // meanwhile fails the append's statement, so nothing commits; were the read-model generation
      // found moved after that COMMIT, what committed alone is the lease time, which a queued run's
      // claim ignores: the run is claimed afresh. A recovery claim (a running run whose
      // lease expired) commits separately, so a lost gate leaves its expired lease as it was.
      const commitsItself = row.status === 'queued';
      const deadlineAt = deadlineOf(row, this.clock.nowMs());
      const events = claimDecision(row, { workerId, leaseEpoch, attempt, deadlineAt, trace });
      const request = { sessionId: row.session_id, tenantId: row.tenant_id, events };
      const appended = commitsItself
        ? await this.appender.appendAndCommit(client, request, preread)
        : await this.appender.appendIn(client, request, preread);
      // The run row as the append left it: the preread row folded through the same projection.
      let runRow: Row | undefined = row.run_row;
      for (const ev of appended.events)
        if (runProjection.keyOf(ev) === row.id) runRow = runProjection.evolve(runRow, ev) ?? runRow;
      const claim: RunClaim = {
        runId: row.id,
        sessionId: row.session_id,
        tenantId: row.tenant_id,
        leaseEpoch,
        attempt,
        workerId,
        trace,
        recovered: row.status === 'running',
        preloaded: runRow
          ? {
              run: toRunRecord(runRow),
              checkpoint: row.checkpoint,
              firstSequence: Number(row.first_sequence ?? appended.events[0].sequence),
              operatorGrants: row.operator_grants,
              hasToolInvocations: row.has_tool_invocations,
              // The statement's snapshot held through the append (its sequence gate): the tail and
              // the claim's own events are the log up to the claim, without a gap.
              sessionTail: sessionTailOf(row.session_tail, appended.events),
            }
          : undefined,
      };
      return commitsItself ? committed(claim) : claim;
    });
  }

  async heartbeat(
    claim: RunClaim,
    leaseMs: number,
  ): Promise<{ held: boolean; cancelRequested: boolean; interruptRequested: boolean }> {
    const res = await this.db.query<{ cancel_requested_at: Date | null; interrupt: unknown }>(
      `UPDATE runs SET lease_expires_at = now() + ($3::int * interval '1 millisecond')
        WHERE id = $1 AND lease_epoch = $2 AND status = 'running'
        RETURNING cancel_requested_at, interrupt`,
      [claim.runId, claim.leaseEpoch, leaseMs],
    );
    const row = res.rows[0];
    return {
      held: row !== undefined,
      cancelRequested: row?.cancel_requested_at != null,
      interruptRequested: row?.interrupt != null,
    };
  }
}

/** The run's deadline: kept from its first start, else its limit counted from now (or none). */
function deadlineOf(row: ClaimRow, nowMs: number): string | null {
  if (row.deadline_at) return row.deadline_at.toISOString();
  return row.limits.deadlineSeconds !== null ? new Date(nowMs + row.limits.deadlineSeconds * 1000).toISOString() : null;
}

/**
 * What the run decider makes of this claim (`ClaimRun`): `run.claimed`, `run.started` and, at the
 * first start, the consent stamp (plan §31) — or, past the crash allowance, `run.failed`.
 */
function claimDecision(
  row: ClaimRow,
  claim: Pick<ClaimRun, 'workerId' | 'leaseEpoch' | 'attempt' | 'deadlineAt' | 'trace'>,
): readonly NewEvent[] {
  const state = runStateOf({
    id: row.id,
    status: row.status as RunStatus,
    cancelRequestedAt: (row.run_row.cancel_requested_at as string | null | undefined) ?? null,
    startedAt: row.started_at?.toISOString() ?? null,
  });
  return eventsOrThrow(
    runDecider.decide(
      {
        kind: 'ClaimRun',
        runId: row.id,
        ...claim,
        trace: claim.trace ? { traceId: claim.trace.traceId, spanId: claim.trace.spanId } : null,
        maxAttempts: MAX_RUN_ATTEMPTS,
        consent: row.consent,
        principalId: row.principal_id,
      },
      state,
    ),
  );
}

interface ClaimRow {
  id: string;
  session_id: string;
  tenant_id: string;
  lease_epoch: string;
  status: string;
  attempts: number;
  limits: { deadlineSeconds: number | null };
  deadline_at: Date | null;
  principal_id: string;
  started_at: Date | null;
  run_row: Row;
  session_row: Row | null;
  generation: string;
  consent: { status: 'granted' | 'withdrawn'; version: number } | null;
  checkpoint: { version: number; state: CheckpointState } | null;
  first_sequence: string | null;
  operator_grants: McpServerGrant[];
  has_tool_invocations: boolean;
  session_tail: (Omit<EventRow, 'created_at'> & { created_at: string })[];
}

/**
 * The claim's session tail: the events its statement read (JSON, not driver rows, decoded as
 * `listAfter` decodes them) and then its own. A stored event the claim cannot decode (a corrupt
 * payload, an unknown schema version) leaves the tail out: the run's first build then reads the log
 * and fails the run naming that event, instead of the claim failing over and over.
 */
function sessionTailOf(read: ClaimRow['session_tail'], own: readonly StoredEvent[]): StoredEvent[] | undefined {
  try {
    return [...read.map((e) => decodeEvent({ ...e, created_at: new Date(e.created_at) })), ...own];
  } catch {
    return undefined;
  }
}

/**
 * The claim statement, prepared once per connection (`Database.transactionFromPrepared`): parsing
 * and planning it took longer than running it (~0.6 ms against ~0.3 ms), on the wake → `run.claimed`
 * path. `$1` is the lease in milliseconds; with `onlyRun`, `$2` is the one run it may claim, with
 * its child runs (a `delegate.run`'s, ADR 0037).
 */
function claimSql(onlyRun: boolean): string {
  return `UPDATE runs r SET lease_expires_at = now() + ($1::int * interval '1 millisecond')
     WHERE r.id = (
       SELECT id FROM runs
        WHERE ((status = 'queued' AND (scheduled_for IS NULL OR scheduled_for <= now()))
           OR (status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < now())))
          -- A run queued behind another (issue 33) waits until it is its session's active run.
          AND (queued_behind IS NULL
               OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = runs.session_id AND s.active_run_id = runs.id))
          ${onlyRun ? 'AND (id = $2::uuid OR parent_run_id = $2::uuid)' : ''}
        ORDER BY priority, created_at
        FOR UPDATE SKIP LOCKED
        LIMIT 1)
     RETURNING r.id, r.session_id, r.tenant_id, r.lease_epoch, r.status, r.attempts, r.limits, r.deadline_at,
               r.principal_id, r.started_at,
               to_jsonb(r) AS run_row,
               (SELECT to_jsonb(s) FROM sessions s WHERE s.id = r.session_id) AS session_row,
               ${GENERATION_SQL}::text AS generation,
               CASE WHEN r.started_at IS NULL THEN
                 (SELECT jsonb_build_object('status', t.status, 'version', t.version) FROM trajectory_consents t
                   WHERE t.tenant_id = r.tenant_id AND t.principal_id = r.principal_id)
               END AS consent,
               (SELECT jsonb_build_object('version', c.version, 'state', c.state) FROM checkpoints c
                 WHERE c.run_id = r.id ORDER BY c.version DESC LIMIT 1) AS checkpoint,
               (SELECT e.sequence FROM events e WHERE ${RUN_EVENTS_JOIN('r')} ORDER BY e.sequence LIMIT 1) AS first_sequence,
               (SELECT coalesce(jsonb_agg(jsonb_build_object('serverId', g.server_id, 'default', g.default_decision,
                                                             'tools', g.tools, 'rules', g.rules)), '[]'::jsonb)
                  FROM agent_mcp_grants g WHERE g.agent_id = r.agent_id) AS operator_grants,
               EXISTS (SELECT 1 FROM tool_invocations ti WHERE ti.run_id = r.id) AS has_tool_invocations,
               (SELECT coalesce(jsonb_agg(jsonb_build_object(
                         'id', e.id::text, 'session_id', e.session_id, 'run_id', e.run_id, 'sequence', e.sequence::text,
                         'event_type', e.event_type, 'payload_schema_version', e.payload_schema_version,
                         'payload', e.payload, 'actor_type', e.actor_type, 'actor_id', e.actor_id,
                         'tenant_id', e.tenant_id, 'trace_id', e.trace_id, 'created_at', e.created_at)
                         ORDER BY e.sequence), '[]'::jsonb)
                  FROM (SELECT * FROM events e WHERE e.session_id = r.session_id
                         ORDER BY e.sequence DESC LIMIT ${CLAIM_TAIL_EVENTS}) e) AS session_tail`;
}

const CLAIM_NEXT: PreparedSql = { name: 'agent_claim_next', text: claimSql(false) };
const CLAIM_ONE: PreparedSql = { name: 'agent_claim_one', text: claimSql(true) };

/**
 * The trace root stored by the run's first traced `run.started`, or null. Read from the run's range
 * of its session's stream: events have no index by `id` or `run_id` to order by (ADR 0054, 0055).
 */
async function storedTraceRoot(client: Queryable, runId: string): Promise<TraceRef | null> {
  const res = await client.query<{ trace_id: string; span_id: string }>(
    `SELECT e.payload->>'traceId' AS trace_id, e.payload->>'spanId' AS span_id FROM runs r JOIN events e ON ${RUN_EVENTS_JOIN('r')}
      WHERE r.id = $1 AND e.event_type = 'run.started'
        AND e.payload->>'traceId' IS NOT NULL AND e.payload->>'spanId' IS NOT NULL
      ORDER BY e.sequence LIMIT 1`,
    [runId],
  );
  const r = res.rows[0];
  return r ? { traceId: r.trace_id, spanId: r.span_id } : null;
}
