import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { PgEventFeed } from '../adapters/postgres/notify/pg-event-feed';
import { PgApprovalQueries } from '../adapters/postgres/pg-approval-queries';
import { PgSessionQueries } from '../adapters/postgres/pg-session-queries';
import { API_SETTINGS, EVENT_FEED, NOTIFICATION_HUBS, STREAM_HUBS, type ApiSettings } from '../api/api-tokens';
import { NotificationHubs } from '../api/sse/notification-stream';
import { ApprovalsController } from '../api/approvals.controller';
import { NotificationsController } from '../api/notifications.controller';
import { DevicesController } from '../api/devices.controller';
import { WebhooksController } from '../api/webhooks.controller';
import { ARTIFACT_STORE, ArtifactsController } from '../api/artifacts.controller';
import { API_LOGGER, EventsController } from '../api/events.controller';
import { HealthController } from '../api/health.controller';
import { ObservabilityController } from '../api/observability.controller';
import { observabilityProviders } from './observability-providers';
import { MCP_ADMIN, McpController } from '../api/mcp.controller';
import { mcpAdminFor } from './mcp-admin';
import { RunsController } from '../api/runs.controller';
import { MEMORY_STORE, MemoriesController } from '../api/memories.controller';
import { SCHEDULE_SERVICE, SchedulesController } from '../api/schedules.controller';
import { SessionsController } from '../api/sessions.controller';
import { TRAJECTORIES, TrajectoryController } from '../api/trajectory.controller';
import { StreamHubs } from '../api/sse/stream-hubs';
import { APPLICATION_HANDLERS } from '../application/handlers';
import { APPROVAL_EDIT_CHECKS, TOOL_RECORDS } from '../application/approvals/tokens';
import { CHILD_RUN_SERVICE, CHILD_RUN_STORE } from '../application/runs/child-runs';
import {
  AGENT_CATALOG,
  APP_SETTINGS,
  APPROVAL_READ_MODEL,
  NOTIFICATION_INBOX,
  NOTIFICATION_PRODUCER,
  DEVICE_REGISTRY,
  NOTIFICATION_PREFERENCES,
  WEBHOOK_REGISTRY,
  CLOCK,
  EVENT_STORE,
  ID_FACTORY,
  RUN_REPOSITORY,
  SESSION_READ_MODEL,
  SESSION_REPOSITORY,
  type ApplicationSettings,
} from '../application/tokens';
import { HEALTH_PROBE } from '../api/health-probe';
import { createHealthProbe } from './health-probe';
import { sandboxStatus } from './prerequisites';
import { loadSandboxSettings } from '../config/sandbox-settings';
import type { Platform } from './platform';

export const PLATFORM = Symbol('Platform');

/** Providers only the HTTP API needs: its single LISTEN connection and the SSE hubs over it. */
function httpProviders(platform: Platform): Provider[] {
  const s = platform.settings;
  const apiSettings: ApiSettings = {
    sseHeartbeatMs: s.sseHeartbeatSeconds * 1000,
    maxActiveRunsPerTenant: s.apiMaxActiveRunsPerTenant,
    sseMaxBufferedBytes: 1_048_576,
  };
  return [
    // One LISTEN connection per API process, opened on the first stream, closed on shutdown.
    { provide: EVENT_FEED, useFactory: () => new PgEventFeed(platform.handle.url, platform.log) },
    {
      provide: STREAM_HUBS,
      useFactory: (feed: PgEventFeed) => new StreamHubs(feed, platform.store, platform.log),
      inject: [EVENT_FEED],
    },
    {
      provide: NOTIFICATION_HUBS,
      useFactory: (feed: PgEventFeed) => new NotificationHubs(feed),
      inject: [EVENT_FEED],
    },
    { provide: API_SETTINGS, useValue: apiSettings },
    { provide: API_LOGGER, useValue: platform.log },
    { provide: MCP_ADMIN, useValue: mcpAdminFor(platform) },
  ];
}

/** Binds the platform's adapters to the application's ports for Nest's CQRS buses and controllers. */
@Module({})
export class AppModule {
  static forPlatform(platform: Platform, opts: { http: boolean }): DynamicModule {
    const appSettings: ApplicationSettings = {
      defaultAgentId: platform.settings.defaultAgentId,
      maxMessageChars: 32_000,
    };
    return {
      module: AppModule,
      imports: [CqrsModule.forRoot()],
      controllers: opts.http
        ? [
            HealthController,
            SessionsController,
            RunsController,
            EventsController,
            ApprovalsController,
            NotificationsController,
            WebhooksController,
            DevicesController,
            ObservabilityController,
            McpController,
            ArtifactsController,
            TrajectoryController,
            MemoriesController,
            SchedulesController,
          ]
        : [],
      providers: [
        { provide: PLATFORM, useValue: platform },
        { provide: EVENT_STORE, useValue: platform.store },
        // A principal reads only its own tenant's and its own sessions and runs (404 otherwise).
        { provide: RUN_REPOSITORY, useValue: platform.runs },
        { provide: SESSION_REPOSITORY, useValue: platform.sessions },
        { provide: SESSION_READ_MODEL, useValue: new PgSessionQueries(platform.db) },
        { provide: APPROVAL_READ_MODEL, useValue: new PgApprovalQueries(platform.db) },
        // The inbox: the notifications projection, principal-scoped (issue 31, ADR 0036).
        { provide: NOTIFICATION_INBOX, useValue: platform.notifications.inbox },
        { provide: WEBHOOK_REGISTRY, useValue: platform.notifications.webhooks },
        { provide: NOTIFICATION_PREFERENCES, useValue: platform.notifications.preferences },
        { provide: NOTIFICATION_PRODUCER, useValue: platform.notifications.producer },
        { provide: DEVICE_REGISTRY, useValue: platform.notifications.devices },
        // Tool lifecycle read models (approval resolution, reviews, run input) — issue 4.
        { provide: TOOL_RECORDS, useValue: platform.toolRecords },
        { provide: APPROVAL_EDIT_CHECKS, useValue: platform.approvalEdits },
        // Child runs of delegate.run (ADR 0037): a parent's cancel cancels them; the run view lists them.
        { provide: CHILD_RUN_SERVICE, useValue: platform.childRuns },
        { provide: CHILD_RUN_STORE, useValue: platform.childRunStore },
        { provide: AGENT_CATALOG, useValue: platform.agents },
        { provide: CLOCK, useValue: platform.clock },
        { provide: ID_FACTORY, useValue: platform.ids },
        { provide: APP_SETTINGS, useValue: appSettings },
        { provide: TRAJECTORIES, useValue: platform.trajectories },
        // Schedules (ADR 0034): the same service the CLI and the schedule tools use.
        { provide: SCHEDULE_SERVICE, useValue: platform.schedules.service },
        // Artifact metadata and content, tenant- and principal-scoped in the controller (issue 8).
        { provide: ARTIFACT_STORE, useValue: platform.artifacts },
        // Long-term memory, tenant- and principal-scoped in SQL (issue 30, ADR 0035).
        { provide: MEMORY_STORE, useValue: platform.memories },
        {
          provide: HEALTH_PROBE,
          useValue: createHealthProbe(platform.db, () =>
            sandboxStatus(loadSandboxSettings(process.env, platform.settings.dataDir), platform.settings.authMode),
          ),
        },
        ...(opts.http ? httpProviders(platform) : []),
        ...(opts.http ? observabilityProviders(platform.db, process.env) : []),
        ...APPLICATION_HANDLERS,
      ],
    };
  }
}
