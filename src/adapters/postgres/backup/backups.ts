import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { ConfigurationError, ConflictError, NotFoundError } from '../../../domain/errors';
import type { BackupManifest, RestoreReport } from '../../../ports/backups';
import { findPgTool, runPgTool } from './pg-tools';

/**
 * Where the artifact bytes live, by storage key: a directory or an S3 bucket (ADR 0045). A backup
 * copies blobs out of it to a local file; a restore copies them back in. Streams, never whole files
 * in memory.
 */
export interface BackupBlobs {
  /** `filesystem <dir>` or `s3://bucket at host`, for messages. */
  describe(): string;
  /** Copies the blob to `file`; false when there is no such blob. */
  readTo(key: string, file: string): Promise<boolean>;
  /** Stores `file` (`size` bytes) as the blob `key`. */
  writeFrom(key: string, file: string, size: number): Promise<void>;
}

/** Where and what: the database, the artifact store, the backups' root. */
export interface BackupTarget {
  readonly databaseUrl: string;
  readonly blobs: BackupBlobs;
  readonly backupsDir: string;
  /** `AGENT_PG_BIN_DIR`: where pg_dump / pg_restore are, when not Debian's or on PATH. */
  readonly pgBinDir?: string;
  readonly release: string;
}

const MANIFEST = 'manifest.json';
const DUMP = 'database.dump';

/**
 * A backup: `pg_dump -Fc` of the database, taken in an exported snapshot, and a copy of every
 * artifact blob the snapshot's `artifacts` rows name (checked against its SHA-256 on the way), with
 * a manifest. The snapshot makes rows and blobs agree: a blob written later is not named, and one
 * the expiry sweep deleted meanwhile fails the backup (run it again).
 */
export async function createBackup(t: BackupTarget, now: Date): Promise<BackupManifest> {
  const id = `${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;
  const dir = path.join(t.backupsDir, id);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const c = new Client({ connectionString: t.databaseUrl });
  await c.connect();
  try {
    const server = await serverOf(c);
    const pgDump = await findPgTool('pg_dump', server.major, t.pgBinDir);
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const snapshot = (await c.query<{ s: string }>('SELECT pg_export_snapshot() AS s')).rows[0].s;
    const schemaRevision = await revisionOf(c);
    const blobs = (
      await c.query<{ storage_key: string; sha256: string }>('SELECT DISTINCT storage_key, sha256 FROM artifacts')
    ).rows;
    await runPgTool(pgDump, [
      '-Fc',
      '--no-owner',
      `--snapshot=${snapshot}`,
      '-f',
      path.join(dir, DUMP),
      '-d',
      t.databaseUrl,
    ]);
    await c.query('COMMIT');
    let bytes = 0;
    for (const b of blobs) bytes += await backUpBlob(t.blobs, b.storage_key, path.join(dir, 'artifacts'), b.sha256);
    const dump = fs.readFileSync(path.join(dir, DUMP));
    const manifest: BackupManifest = {
      id,
      createdAt: now.toISOString(),
      release: t.release,
      schemaRevision,
      serverVersion: server.version,
      tool: { path: pgDump.path, major: pgDump.major },
      database: { file: DUMP, sha256: sha256(dump), bytes: dump.length },
      artifacts: { count: blobs.length, bytes },
    };
    fs.writeFileSync(path.join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** The backups under `backupsDir`, oldest first (a directory without a manifest is not a backup). */
export function listBackups(backupsDir: string): BackupManifest[] {
  if (!fs.existsSync(backupsDir)) return [];
  return fs
    .readdirSync(backupsDir)
    .filter((d) => fs.existsSync(path.join(backupsDir, d, MANIFEST)))
    .sort()
    .map((d) => JSON.parse(fs.readFileSync(path.join(backupsDir, d, MANIFEST), 'utf8')) as BackupManifest);
}

/**
 * Restores backup `id` into the (empty) database and artifact store of `t`: the dump's checksum is
 * checked first, `pg_restore` loads it, the schema revision must be the manifest's, and every
 * artifact row's blob is copied in and verified against its SHA-256.
 */
export async function restoreBackup(t: BackupTarget, id: string): Promise<RestoreReport> {
  const dir = path.join(t.backupsDir, id);
  if (!/^[0-9TZ]+-[0-9a-f]{6}$/.test(id) || !fs.existsSync(path.join(dir, MANIFEST)))
    throw new NotFoundError(`no backup ${id} in ${t.backupsDir}`, { id });
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, MANIFEST), 'utf8')) as BackupManifest;
  if (sha256(fs.readFileSync(path.join(dir, DUMP))) !== manifest.database.sha256)
    throw new ConfigurationError(
      `backup ${id}: ${DUMP} does not match its manifest's SHA-256 (corrupt); not restored`,
      { id },
    );
  const c = new Client({ connectionString: t.databaseUrl });
  await c.connect();
  try {
    const tables = await c.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM pg_tables WHERE schemaname = 'public'`,
    );
    if (tables.rows[0].n !== '0')
      throw new ConflictError('restore needs an empty database: DATABASE_URL has tables (create a new database)', {});
    const pgRestore = await findPgTool(
      'pg_restore',
      Math.max((await serverOf(c)).major, manifest.tool.major),
      t.pgBinDir,
    );
    await runPgTool(pgRestore, ['--no-owner', '--exit-on-error', '-d', t.databaseUrl, path.join(dir, DUMP)]);
    const revision = await revisionOf(c);
    if (revision !== manifest.schemaRevision)
      throw new ConfigurationError(
        `restored schema revision ${revision}, the manifest says ${manifest.schemaRevision}`,
        {},
      );
    const rows = (
      await c.query<{ storage_key: string; sha256: string }>('SELECT DISTINCT storage_key, sha256 FROM artifacts')
    ).rows;
    for (const r of rows) await restoreBlob(t.blobs, r.storage_key, path.join(dir, 'artifacts'), r.sha256);
    return { manifest, artifactsVerified: rows.length };
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function serverOf(c: Client): Promise<{ major: number; version: string }> {
  const r = await c.query<{ num: string; version: string }>(
    `SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version`,
  );
  return { major: Math.floor(Number(r.rows[0].num) / 10000), version: r.rows[0].version };
}

async function revisionOf(c: Client): Promise<string> {
  const r = await c.query<{ name: string }>('SELECT name FROM typeorm_migrations ORDER BY timestamp DESC LIMIT 1');
  return r.rows[0]?.name ?? '(none)';
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

const STORAGE_KEY = /^sha256\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}$/;

/** Copies one blob out of the store into the backup, refusing one that does not hash to `expected`; returns its size. */
async function backUpBlob(blobs: BackupBlobs, key: string, root: string, expected: string): Promise<number> {
  if (!STORAGE_KEY.test(key)) throw new Error(`artifact row names an invalid storage key; not backed up`);
  const to = path.join(root, key);
  fs.mkdirSync(path.dirname(to), { recursive: true });
  if (!(await blobs.readTo(key, to)))
    throw new Error(`artifact blob ${path.basename(key)} is missing from ${blobs.describe()}`);
  const { sha, size } = await hashFile(to);
  if (sha !== expected)
    throw new Error(`artifact blob ${path.basename(key)} in ${blobs.describe()} does not match its SHA-256`);
  return size;
}

/** Copies one blob from the backup into the store after checking it hashes to `expected`. */
async function restoreBlob(blobs: BackupBlobs, key: string, root: string, expected: string): Promise<void> {
  if (!STORAGE_KEY.test(key)) throw new Error(`artifact row names an invalid storage key; not restored`);
  const from = path.join(root, key);
  if (!fs.existsSync(from)) throw new Error(`artifact blob ${path.basename(key)} is missing from ${root}`);
  const { sha, size } = await hashFile(from);
  if (sha !== expected) throw new Error(`artifact blob ${path.basename(key)} does not match its SHA-256`);
  await blobs.writeFrom(key, from, size);
}

async function hashFile(file: string): Promise<{ sha: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of fs.createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha: hash.digest('hex'), size };
}
