import type { Command } from 'commander';
import { backUp, backups, restore } from '../../composition/backup';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { EXIT, exitCodeFor } from '../exit-codes';

async function guarded(fn: () => Promise<void>): Promise<never> {
  try {
    loadDotEnv();
    await fn();
    process.exit(EXIT.ok);
  } catch (e) {
    process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(exitCodeFor(e));
  }
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MiB`;

export function registerBackupCommands(program: Command): void {
  const backup = program
    .command('backup')
    .description('back up and restore the database and the artifact store (docs/operations/ha.md)');
  backup
    .command('create')
    .description('pg_dump the database in one snapshot, copy the artifacts it names, write a manifest')
    .action(() =>
      guarded(async () => {
        const settings = loadSettings();
        const m = await backUp(settings, new Date());
        process.stdout.write(
          `backup ${m.id}: database ${mib(m.database.bytes)} (${m.tool.path}, PostgreSQL ${m.serverVersion}), ` +
            `${m.artifacts.count} artifacts ${mib(m.artifacts.bytes)}, schema ${m.schemaRevision}\n` +
            `in ${settings.backupDir}/${m.id}\n`,
        );
      }),
    );
  backup
    .command('list')
    .description('the backups in AGENT_BACKUP_DIR, oldest first')
    .action(() =>
      guarded(async () => {
        const list = backups(loadSettings());
        if (list.length === 0) process.stdout.write('no backups\n');
        for (const m of list)
          process.stdout.write(
            `${m.id}  ${m.createdAt}  db ${mib(m.database.bytes)}  ${m.artifacts.count} artifacts  ${m.schemaRevision}\n`,
          );
        await Promise.resolve();
      }),
    );
  backup
    .command('restore <id>')
    .description(
      'restore a backup into the empty database at DATABASE_URL and the configured artifact store (AGENT_ARTIFACT_DIR or S3_BUCKET)',
    )
    .action((id: string) =>
      guarded(async () => {
        const r = await restore(loadSettings(), id);
        process.stdout.write(
          `restored ${r.manifest.id} (schema ${r.manifest.schemaRevision}); ${r.artifactsVerified} artifacts verified by SHA-256\n` +
            'next: agent projections rebuild --verify\n',
        );
      }),
    );
}
