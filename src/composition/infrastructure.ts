import { createLogger } from '../adapters/logging/pino-logger';
import { assertWritablePrimary, connectDatabase, migrateToLatest as migrate } from '../adapters/postgres/connect';
import type { Settings } from '../config/settings';
import type { Logger } from '../ports/logger';

/** The database a process uses: where it is, and how to let go of it (stops an embedded server it started). */
export interface DatabaseHandle {
  readonly url: string;
  /** The embedded server this process started, or null (DATABASE_URL, or another process's server). */
  readonly embedded: { readonly dataDir: string; readonly port: number } | null;
  close(): Promise<void>;
}

/** The database a process should use: DATABASE_URL, a running embedded server, or a new one. */
export function openDatabase(settings: Settings, log: (line: string) => void): Promise<DatabaseHandle> {
  return connectDatabase({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, log });
}

/** Applies every pending migration; returns the names of those applied. Refuses a read-only server first. */
export async function migrateToLatest(url: string): Promise<string[]> {
  await assertWritablePrimary(url);
  return migrate(url);
}

export function serviceLogger(settings: Settings, service: string): Logger {
  return createLogger({ level: settings.logLevel, service });
}
