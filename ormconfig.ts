import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { EventStore1764500000000 } from './migrations/1764500000000-EventStore';
import { RunReadModels1764500100000 } from './migrations/1764500100000-RunReadModels';
import { ToolLifecycle1764500200000 } from './migrations/1764500200000-ToolLifecycle';
import { ModelPrices1764500300000 } from './migrations/1764500300000-ModelPrices';
import { ModelCallVersions1764500500000 } from './migrations/1764500500000-ModelCallVersions';
import { ArtifactStore1764600000000 } from './migrations/1764600000000-ArtifactStore';
import { TrajectoryExport1764610000000 } from './migrations/1764610000000-TrajectoryExport';
import { LeanAppend1764630000000 } from './migrations/1764630000000-LeanAppend';
import { McpGrants1764660000000 } from './migrations/1764660000000-McpGrants';
import { ExportHeartbeat1764700000000 } from './migrations/1764700000000-ExportHeartbeat';
import { HotToolInvocations1764800000000 } from './migrations/1764800000000-HotToolInvocations';
import { EventsRowGate1764800100000 } from './migrations/1764800100000-EventsRowGate';
import { ReadModelGeneration1764800200000 } from './migrations/1764800200000-ReadModelGeneration';
import { GenerationCounter1764900000000 } from './migrations/1764900000000-GenerationCounter';
import { SessionSearch1765000000000 } from './migrations/1765000000000-SessionSearch';
import { Notifications1765100000000 } from './migrations/1765100000000-Notifications';
import { Webhooks1765100100000 } from './migrations/1765100100000-Webhooks';
import { RunScopes1765300000000 } from './migrations/1765300000000-RunScopes';
import { MemoryRecords1765320000000 } from './migrations/1765320000000-MemoryRecords';
import { Schedules1765310000000 } from './migrations/1765310000000-Schedules';
import { NotificationStream1765370000000 } from './migrations/1765370000000-NotificationStream';
import { ApprovalExpiryWarning1765370100000 } from './migrations/1765370100000-ApprovalExpiryWarning';
import { NotificationPreferences1765370200000 } from './migrations/1765370200000-NotificationPreferences';
import { McpGrantArgumentRules1765374340000 } from './migrations/1765374340000-McpGrantArgumentRules';
import { Devices1765370300000 } from './migrations/1765370300000-Devices';
import { ChildRuns1765330000000 } from './migrations/1765330000000-ChildRuns';
import { SessionRunQueue1765360000000 } from './migrations/1765360000000-SessionRunQueue';
import { RunInterrupt1765360100000 } from './migrations/1765360100000-RunInterrupt';
import { SessionForks1765410000000 } from './migrations/1765410000000-SessionForks';
import { RunSchedule1765420000000 } from './migrations/1765420000000-RunSchedule';
import { McpServers1765430000000 } from './migrations/1765430000000-McpServers';
import { LeanEvents1765440000000 } from './migrations/1765440000000-LeanEvents';
import { RunsColumnOrder1765440100000 } from './migrations/1765440100000-RunsColumnOrder';
import { CheckpointKey1765440200000 } from './migrations/1765440200000-CheckpointKey';
import { EventKeys1765450000000 } from './migrations/1765450000000-EventKeys';
import { GlobalBatchHeads1765450300000 } from './migrations/1765450300000-GlobalBatchHeads';
import { MemorySourceKeys1765450400000 } from './migrations/1765450400000-MemorySourceKeys';
import { MemoryFormations1765380000000 } from './migrations/1765380000000-MemoryFormations';

/** Every migration, in order. Listed as classes (not globs) so tsc output, swc and the CLI agree. */
export const MIGRATIONS = [
  EventStore1764500000000,
  RunReadModels1764500100000,
  ToolLifecycle1764500200000,
  ModelPrices1764500300000,
  ModelCallVersions1764500500000,
  ArtifactStore1764600000000,
  TrajectoryExport1764610000000,
  LeanAppend1764630000000,
  McpGrants1764660000000,
  ExportHeartbeat1764700000000,
  HotToolInvocations1764800000000,
  EventsRowGate1764800100000,
  ReadModelGeneration1764800200000,
  GenerationCounter1764900000000,
  SessionSearch1765000000000,
  Notifications1765100000000,
  Webhooks1765100100000,
  RunScopes1765300000000,
  Schedules1765310000000,
  MemoryRecords1765320000000,
  ChildRuns1765330000000,
  SessionRunQueue1765360000000,
  RunInterrupt1765360100000,
  NotificationStream1765370000000,
  ApprovalExpiryWarning1765370100000,
  NotificationPreferences1765370200000,
  Devices1765370300000,
  McpGrantArgumentRules1765374340000,
  MemoryFormations1765380000000,
  SessionForks1765410000000,
  RunSchedule1765420000000,
  McpServers1765430000000,
  LeanEvents1765440000000,
  RunsColumnOrder1765440100000,
  CheckpointKey1765440200000,
  EventKeys1765450000000,
  GlobalBatchHeads1765450300000,
  MemorySourceKeys1765450400000,
];

/**
 * The TypeORM DataSource used by the app, the tests and the TypeORM CLI
 * (`npx typeorm -d dist/ormconfig.js migration:show`). Schema changes only ever come from
 * migrations; `synchronize` is off.
 */
export function createDataSource(url: string): DataSource {
  return new DataSource({
    type: 'postgres',
    url,
    entities: [],
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    logging: false,
  });
}

/** Default export for the TypeORM CLI; it requires DATABASE_URL. */
export default createDataSource(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/agent_core');
