import { TemporalCalendar } from '../adapters/calendar/temporal-calendar';
import { PgListenWakeup } from '../adapters/postgres/notify/pg-listen-wakeup';
import { PgScheduleFiring } from '../adapters/postgres/schedules/pg-schedule-firing';
import { PgScheduleQueries, SCHEDULES_CHANNEL } from '../adapters/postgres/schedules/pg-schedule-queries';
import type { Database } from '../adapters/postgres/database';
import type { PgAppender } from '../adapters/postgres/event-store/pg-appender';
import { TOOL_USE_SCOPE } from '../api/auth/scopes';
import { OccurrencePlanner } from '../application/schedules/occurrence-planner';
import { ScheduleService } from '../application/schedules/schedule-service';
import type { ScheduleSettings } from '../config/schedule-settings';
import type { Settings } from '../config/settings';
import type { AgentCatalog } from '../ports/agent-catalog';
import type { Clock, IdFactory } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import type { Logger } from '../ports/logger';
import type { PrincipalDirectory } from '../ports/principal-directory';
import type { ScheduleCalendar } from '../ports/schedule-calendar';
import type { ScheduleFiring, ScheduleReadModel } from '../ports/schedules';
import { Scheduler, type SchedulerSettings } from '../runtime/scheduler';
import type { ToolRegistry } from '../tools/registry';
import { principalDirectory } from './principal-directory';

/** What the platform exposes of schedules (ADR 0034). */
export interface SchedulesPart {
  readonly service: ScheduleService;
  readonly reads: ScheduleReadModel;
  readonly calendar: ScheduleCalendar;
  /** The scheduler's transaction, for a scheduler and for tests that drive it with their own now. */
  readonly firing: ScheduleFiring;
  readonly settings: ScheduleSettings;
  /** A scheduler over this platform's database; `start()` it (it LISTENs on its own connection). */
  createScheduler(overrides?: Partial<SchedulerSettings>): Scheduler;
}

export interface ScheduleWiringDeps {
  readonly settings: Settings;
  readonly scheduleSettings: ScheduleSettings;
  readonly db: Database;
  readonly url: string;
  readonly appender: PgAppender;
  readonly store: EventStore;
  readonly agents: AgentCatalog;
  readonly registry: ToolRegistry;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  /** The principal directory (default: the tokens file or the local principal, per AUTH_MODE). */
  readonly principals?: PrincipalDirectory;
}

/** Scopes a run can use: `tools.use` and every registered tool's own. */
export function executionScopes(registry: ToolRegistry): string[] {
  return [...new Set([TOOL_USE_SCOPE, ...registry.list().flatMap((t) => t.spec.requiredScopes)])].sort();
}

export function wireSchedules(d: ScheduleWiringDeps): SchedulesPart {
  const calendar = new TemporalCalendar();
  const queries = new PgScheduleQueries(d.db);
  const scopes = executionScopes(d.registry);
  const service = new ScheduleService({
    store: d.store,
    reads: queries,
    agents: d.agents,
    calendar,
    wakeup: queries,
    clock: d.clock,
    ids: d.ids,
    defaultAgentId: d.settings.defaultAgentId,
    maxMessageChars: 32_000,
    executionScopes: scopes,
  });
  const s = d.scheduleSettings;
  const planner = new OccurrencePlanner({
    directory: d.principals ?? principalDirectory(d.settings, scopes, d.log),
    agents: d.agents,
    calendar,
    ids: d.ids,
    misfireGraceMs: s.misfireGraceSeconds * 1000,
  });
  const firing = new PgScheduleFiring(
    d.db,
    d.appender,
    planner,
    {
      maxActiveRuns: s.tenantMaxActiveRuns,
      maxFiringsPerMinute: s.tenantMaxFiringsPerMinute,
      dailyCost: s.tenantDailyCost,
      monthlyCost: s.tenantMonthlyCost,
    },
    d.log,
  );
  return {
    service,
    reads: queries,
    calendar,
    firing,
    settings: s,
    createScheduler: (o = {}) =>
      new Scheduler(firing, new PgListenWakeup(d.url, d.log, SCHEDULES_CHANNEL), d.clock, d.log, {
        batchSize: o.batchSize ?? s.batchSize,
        concurrency: o.concurrency ?? s.concurrency,
        pollMs: o.pollMs ?? s.pollMs,
      }),
  };
}
