import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { loadSettings, type Settings } from '../../src/config/settings';
import { AppModule } from '../../src/composition/app.module';
import { createPlatform, type Platform, type PlatformOptions } from '../../src/composition/platform';
import { CreateSessionCommand } from '../../src/application/sessions/create-session';
import { SubmitMessageCommand, type RunOverrides } from '../../src/application/runs/submit-message';
import { LOCAL_PRINCIPAL } from '../../src/domain/principal';
import type { StoredEvent } from '../../src/domain/events/payloads';

export interface TestPlatform {
  readonly platform: Platform;
  readonly commands: CommandBus;
  readonly queries: QueryBus;
  /** Creates a session and submits `text`; returns the run id. */
  submit(text: string, overrides?: RunOverrides, sessionId?: string): Promise<{ runId: string; sessionId: string }>;
  events(runId: string): Promise<StoredEvent[]>;
  /** Polls until the run is terminal (or throws after `timeoutMs`). */
  waitForTerminal(runId: string, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

/** `options` adds to the test defaults, e.g. a `logger` that captures the structured logs. */
export async function createTestPlatform(
  url: string,
  settings: Partial<Settings> = {},
  options: Partial<PlatformOptions> = {},
): Promise<TestPlatform> {
  const platform = await createPlatform(
    { ...loadSettings({}), ...settings },
    { service: 'test', databaseUrl: url, quiet: true, migrate: false, poolSize: 20, ...options },
  );
  const app: INestApplicationContext = await NestFactory.createApplicationContext(
    AppModule.forPlatform(platform, { http: false }),
    { logger: false },
  );
  const commands = app.get(CommandBus);
  const queries = app.get(QueryBus);
  return {
    platform,
    commands,
    queries,
    async submit(text, overrides = {}, sessionId) {
      const sid = sessionId ?? (await commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL))).id;
      const r = await commands.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, sid, text, null, overrides));
      return { runId: r.runId, sessionId: sid };
    },
    events: (runId) => platform.store.listRunEvents(runId, LOCAL_PRINCIPAL),
    async waitForTerminal(runId, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const run = await platform.runs.get(runId, null);
        if (run && ['completed', 'failed', 'cancelled', 'interrupted'].includes(run.status)) return run.status;
        if (Date.now() > end) throw new Error(`run ${runId} still ${run?.status} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      await app.close();
      await platform.close();
    },
  };
}

/** True when `expected` appears in `actual` as a subsequence (same relative order). */
export function isSubsequence(expected: readonly string[], actual: readonly string[]): boolean {
  let i = 0;
  for (const a of actual) if (a === expected[i]) i++;
  return i === expected.length;
}
