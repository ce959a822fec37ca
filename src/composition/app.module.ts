import { Module, type DynamicModule } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { HealthController } from '../api/health.controller';
import { APPLICATION_HANDLERS } from '../application/handlers';
import { AGENT_CATALOG, APP_SETTINGS, CLOCK, EVENT_STORE, ID_FACTORY, RUN_REPOSITORY, SESSION_REPOSITORY, type ApplicationSettings } from '../application/tokens';
import { HEALTH_PROBE } from '../api/health-probe';
import { createHealthProbe } from './health-probe';
import type { Platform } from './platform';

export const PLATFORM = Symbol('Platform');

/** Binds the platform's adapters to the application's ports for Nest's CQRS buses and controllers. */
@Module({})
export class AppModule {
  static forPlatform(platform: Platform, opts: { http: boolean }): DynamicModule {
    const appSettings: ApplicationSettings = { defaultAgentId: platform.settings.defaultAgentId, maxMessageChars: 32_000 };
    return {
      module: AppModule,
      imports: [CqrsModule.forRoot()],
      controllers: opts.http ? [HealthController] : [],
      providers: [
        { provide: PLATFORM, useValue: platform },
        { provide: EVENT_STORE, useValue: platform.store },
        { provide: RUN_REPOSITORY, useValue: platform.runs },
        { provide: SESSION_REPOSITORY, useValue: platform.sessions },
        { provide: AGENT_CATALOG, useValue: platform.agents },
        { provide: CLOCK, useValue: platform.clock },
        { provide: ID_FACTORY, useValue: platform.ids },
        { provide: APP_SETTINGS, useValue: appSettings },
        { provide: HEALTH_PROBE, useValue: createHealthProbe(platform.db) },
        ...APPLICATION_HANDLERS,
      ],
    };
  }
}
