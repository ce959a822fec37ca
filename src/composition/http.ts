import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import { AgentErrorFilter } from '../api/agent-error.filter';
import { AppModule } from './app.module';
import type { Platform } from './platform';

/** Builds the HTTP application on a platform; the caller decides where it listens. */
export async function createHttpApp(platform: Platform): Promise<INestApplication> {
  const app = await NestFactory.create(AppModule.forPlatform(platform, { http: true }), { logger: false, abortOnError: false });
  app.useGlobalFilters(new AgentErrorFilter());
  app.enableShutdownHooks();
  return app;
}
