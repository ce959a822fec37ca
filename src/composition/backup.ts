import { createBackup, listBackups, restoreBackup } from '../adapters/postgres/backup/backups';
import type { BackupManifest, RestoreReport } from '../ports/backups';
import type { Settings } from '../config/settings';
import { openDatabase } from './infrastructure';

export type { BackupManifest, RestoreReport };

/** The release a backup records: the package's version. */
const RELEASE = '0.1.0';

/** `agent backup create`: the database (DATABASE_URL or the embedded server) and its artifacts. */
export async function backUp(settings: Settings, now: Date): Promise<BackupManifest> {
  const handle = await openDatabase(settings, () => undefined);
  try {
    return await createBackup(targetOf(settings, handle.url), now);
  } finally {
    await handle.close();
  }
}

export function backups(settings: Settings): BackupManifest[] {
  return listBackups(settings.backupDir);
}

/** `agent backup restore <id>`: into DATABASE_URL's (empty) database and AGENT_ARTIFACT_DIR. */
export async function restore(settings: Settings, id: string): Promise<RestoreReport> {
  const handle = await openDatabase(settings, () => undefined);
  try {
    return await restoreBackup(targetOf(settings, handle.url), id);
  } finally {
    await handle.close();
  }
}

function targetOf(settings: Settings, databaseUrl: string) {
  return {
    databaseUrl,
    artifactDir: settings.artifactDir,
    backupsDir: settings.backupDir,
    pgBinDir: settings.pgBinDir ?? undefined,
    release: RELEASE,
  };
}
