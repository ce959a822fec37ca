import { type BackupTarget, createBackup, listBackups, restoreBackup } from '../adapters/postgres/backup/backups';
import type { BackupManifest, RestoreReport } from '../ports/backups';
import type { Settings } from '../config/settings';
import { openDatabase } from './infrastructure';
import { fsBlobCopier, s3BlobCopier } from '../adapters/artifacts/backup-blobs';
import { s3BlobsOf } from './artifact-store';

export type { BackupManifest, RestoreReport };

/** The release a backup records: the package's version. */
const RELEASE = '0.1.0';

/**
 * `agent backup create`: the database (DATABASE_URL or the embedded server) and its artifacts, from
 * the configured store (AGENT_ARTIFACT_DIR or, with ARTIFACT_STORE=s3, the bucket).
 */
export async function backUp(settings: Settings, now: Date): Promise<BackupManifest> {
  return withTarget(settings, (t) => createBackup(t, now));
}

export function backups(settings: Settings): BackupManifest[] {
  return listBackups(settings.backupDir);
}

/** `agent backup restore <id>`: into DATABASE_URL's (empty) database and the configured artifact store. */
export async function restore(settings: Settings, id: string): Promise<RestoreReport> {
  return withTarget(settings, (t) => restoreBackup(t, id));
}

async function withTarget<T>(settings: Settings, fn: (t: BackupTarget) => Promise<T>): Promise<T> {
  const s3 = s3BlobsOf(settings);
  const handle = await openDatabase(settings, () => undefined);
  try {
    return await fn({
      databaseUrl: handle.url,
      blobs: s3 ? s3BlobCopier(s3) : fsBlobCopier(settings.artifactDir),
      backupsDir: settings.backupDir,
      pgBinDir: settings.pgBinDir ?? undefined,
      release: RELEASE,
    });
  } finally {
    s3?.close();
    await handle.close();
  }
}
