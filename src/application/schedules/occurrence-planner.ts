import { ScopeSet } from '../../domain/scopes';
import { eventsOrThrow, evolveAll, type Actor } from '../../domain/deciders/decider';
import { scheduleDecider, scheduleStateOf, type OccurrenceFacts } from '../../domain/deciders/schedule';
import { sessionDecider } from '../../domain/deciders/session';
import type { NewEvent } from '../../domain/events/payloads';
import { isTerminal, type RunStatus } from '../../domain/run/status';
import { isoInstantOf, SCHEDULED_RUN_PRIORITY, type ScheduleDefinition } from '../../domain/schedules/schedule';
import type { AgentSpec } from '../../domain/agent';
import type { AgentCatalog } from '../../ports/agent-catalog';
import type { IdFactory } from '../../ports/clock';
import type { PrincipalDirectory } from '../../ports/principal-directory';
import type { ScheduleCalendar } from '../../ports/schedule-calendar';
import type { Admission, DueSchedule, OccurrencePlanning, PlannedOccurrence } from '../../ports/schedules';

export interface PlannerDeps {
  readonly directory: PrincipalDirectory;
  readonly agents: AgentCatalog;
  readonly calendar: ScheduleCalendar;
  readonly ids: IdFactory;
  /** An occurrence later than this past its instant is a misfire (coalesced). */
  readonly misfireGraceMs: number;
}

const SCHEDULER: Actor = { actorType: 'system', actorId: 'scheduler' };
/** Missed instants counted per coalesced catch-up at most (the count is evidence, not a walk). */
const MISSED_COUNT_CAP = 10_000;

/**
 * What the scheduler records for one due schedule (ADR 0034): the facts of the firing — current
 * authority, the pinned agent version, tenant admission, overlap, misfire — handed to the schedule
 * decider, and, when it fires, the dedicated session and its queued run from the session decider
 * (the submit path's own `SubmitMessage`). No I/O but the directory, catalog and admission reads.
 */
export class OccurrencePlanner implements OccurrencePlanning {
  /** Agent versions seen recently (a stored version never changes; a vanished one is seen within a minute). */
  private readonly agentMemo = new Map<string, { spec: AgentSpec | null; until: number }>();

  constructor(private readonly d: PlannerDeps) {}

  async plan(due: DueSchedule, now: string, admission: Admission): Promise<PlannedOccurrence> {
    const state = scheduleStateOf(due.row);
    const def = state.definition!;
    const scheduleId = String(due.row.id);
    const tenantId = String(due.row.tenant_id);
    const principalId = String(due.row.principal_id);
    const due0 = isoInstantOf(due.row.next_fire_at)!;
    // Past the grace: one coalesced occurrence at the latest instant due, the others counted on it.
    const late = Date.parse(now) - Date.parse(due0) > this.d.misfireGraceMs;
    const nominalAt = late ? (this.d.calendar.lastAtOrBefore(def.cadence, due0, now) ?? due0) : due0;
    const missedCount = late ? this.d.calendar.countBetween(def.cadence, due0, nominalAt, MISSED_COUNT_CAP) : 0;
    const nextFireAt = this.d.calendar.nextAfter(def.cadence, late ? now : nominalAt);
    const agent = await this.agent(def, Date.parse(now));
    const facts = await this.facts(def, agent, tenantId, principalId, due, late, admission);
    const occurrence = eventsOrThrow(
      scheduleDecider.decide(
        {
          kind: 'RecordOccurrence',
          actor: SCHEDULER,
          occurrenceId: this.d.ids.uuid(),
          nominalAt,
          facts,
          missedCount,
          nextFireAt,
          principalId,
        },
        state,
      ),
    );
    const base = { scheduleId, tenantId, expectedSequence: due.lastSequence, nominalAt, streamEvents: occurrence };
    if (facts.kind !== 'runnable' || agent === null) return { ...base, session: null };
    const run = {
      ...facts,
      messageId: this.d.ids.uuid(),
      modelPolicy: agent.modelPolicy,
      // ADR 0032: the run holds the schedule's recorded scopes, narrowed by the agent — never more.
      scopes: ScopeSet.forRun(def.scopes, agent.allowedScopes).names,
    };
    return {
      ...base,
      session: { sessionId: facts.sessionId, events: sessionEvents(def, principalId, run, scheduleId, nominalAt) },
    };
  }

  private async agent(def: ScheduleDefinition, nowMs: number): Promise<AgentSpec | null> {
    const key = `${def.agentId}@${def.agentVersion}`;
    const memo = this.agentMemo.get(key);
    if (memo && memo.until > nowMs) return memo.spec;
    const spec = await this.d.agents.get(def.agentId, def.agentVersion);
    this.agentMemo.set(key, { spec, until: nowMs + 60_000 });
    return spec;
  }

  /** Authority first, then the agent, admission, overlap and misfire: the first that refuses decides. */
  private async facts(
    def: ScheduleDefinition,
    agent: AgentSpec | null,
    tenantId: string,
    principalId: string,
    due: DueSchedule,
    late: boolean,
    admission: Admission,
  ): Promise<OccurrenceFacts> {
    const scopes = this.d.directory.scopesOf(tenantId, principalId);
    if (scopes === null)
      return { kind: 'refused', reason: 'principal_missing', message: `principal ${principalId} no longer exists` };
    const missing = def.scopes.filter((s) => !scopes.has(s));
    if (missing.length > 0)
      return {
        kind: 'refused',
        reason: 'scope_revoked',
        message: `principal ${principalId} no longer holds ${missing.join(', ')}`,
      };
    if (agent === null)
      return {
        kind: 'refused',
        reason: 'agent_version_missing',
        message: `agent ${def.agentId} v${def.agentVersion} no longer exists`,
      };
    const refused = await admission(tenantId);
    if (refused) return { kind: 'refused', ...refused };
    const lastRunId = due.row.last_run_id;
    if (typeof lastRunId === 'string' && due.lastRunStatus !== null && !isTerminal(due.lastRunStatus as RunStatus))
      return { kind: 'overlap', activeRunId: lastRunId };
    if (late && def.misfire === 'skip') return { kind: 'missed' };
    return { kind: 'runnable', sessionId: this.d.ids.uuid(), runId: this.d.ids.uuid() };
  }
}

/** The occurrence's own session and its first message and queued run, as a submit would write them. */
function sessionEvents(
  def: ScheduleDefinition,
  principalId: string,
  facts: {
    readonly sessionId: string;
    readonly runId: string;
    readonly messageId: string;
    readonly modelPolicy: string;
    readonly scopes: readonly string[];
  },
  scheduleId: string,
  nominalAt: string,
): NewEvent[] {
  const created = eventsOrThrow(
    sessionDecider.decide(
      {
        kind: 'CreateSession',
        actor: SCHEDULER,
        agentId: def.agentId,
        agentVersion: def.agentVersion,
        principalId,
        title: def.title,
        metadata: { schedule_id: scheduleId, nominal_at: nominalAt },
      },
      sessionDecider.initialState(),
    ),
  );
  const state = evolveAll(sessionDecider, sessionDecider.initialState(), created);
  const submitted = sessionDecider.decide(
    {
      kind: 'SubmitMessage',
      sessionId: facts.sessionId,
      messageId: facts.messageId,
      content: [{ type: 'text', text: def.message }],
      run: {
        runId: facts.runId,
        actor: SCHEDULER,
        agentId: def.agentId,
        agentVersion: def.agentVersion,
        principalId,
        modelPolicy: facts.modelPolicy,
        limits: def.limits,
        priority: SCHEDULED_RUN_PRIORITY,
        idempotencyKey: null,
        requestHash: null,
        scopes: facts.scopes,
        // Issue 31: the run names its schedule, so its completion or failure notifies as scheduled.
        scheduleId,
        // Issue 25 (per-run scope sets): once the submit path records a run's scopes, pass
        // `def.scopes` here — the schedule's requested scopes, re-checked against the principal above.
      },
    },
    state,
  );
  return [...created, ...eventsOrThrow(submitted)];
}
