import { createLogger } from '../adapters/logging/pino-logger';
import { connectDatabase, migrateToLatest, type DatabaseHandle } from '../adapters/postgres/connect';
import type { Settings } from '../config/settings';
import type { Logger } from '../ports/logger';

export type { DatabaseHandle };

/** The database a process should use: DATABASE_URL, a running embedded server, or a new one. */
export function openDatabase(settings: Settings, log: (line: string) => void): Promise<DatabaseHandle> {
  return connectDatabase({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, log });
}

export { migrateToLatest };

export function serviceLogger(settings: Settings, service: string): Logger {
  return createLogger({ level: settings.logLevel, service });
}
