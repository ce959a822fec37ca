import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ConfigurationError } from '../../../domain/errors';

const run = promisify(execFile);

/** A PostgreSQL client program (`pg_dump`, `pg_restore`) and its major version. */
export interface PgTool {
  readonly path: string;
  readonly major: number;
}

/**
 * Finds `name` able to work with a server of major version `serverMajor`: in `AGENT_PG_BIN_DIR`
 * when set, else the newest of Debian's `/usr/lib/postgresql/<N>/bin` (postgresql-client-N), else
 * PATH. pg_dump and pg_restore refuse a server newer than themselves, so an older one is refused here
 * with the package that fixes it (the embedded server ships no client tools).
 */
export async function findPgTool(
  name: 'pg_dump' | 'pg_restore',
  serverMajor: number,
  binDir?: string,
): Promise<PgTool> {
  const candidates: string[] = [];
  if (binDir) candidates.push(path.join(binDir, name));
  else {
    const debian = '/usr/lib/postgresql';
    const versions = fs.existsSync(debian)
      ? fs
          .readdirSync(debian)
          .filter((v) => /^\d+$/.test(v))
          .sort((a, b) => Number(b) - Number(a))
      : [];
    for (const v of versions) candidates.push(path.join(debian, v, 'bin', name));
    candidates.push(name);
  }
  const found: PgTool[] = [];
  for (const c of candidates) {
    const major = await versionOf(c);
    if (major !== null) found.push({ path: c, major });
  }
  const fit = found.find((t) => t.major >= serverMajor);
  if (fit) return fit;
  const have = found.length > 0 ? `only ${found.map((t) => `${t.path} (${t.major})`).join(', ')}` : 'none';
  throw new ConfigurationError(
    `${name} for PostgreSQL ${serverMajor} not found (${have}): install postgresql-client-${serverMajor} ` +
      `(Debian's postgresql-client is 15) or set AGENT_PG_BIN_DIR to a directory holding ${name} ≥ ${serverMajor}`,
    { tool: name, serverMajor },
  );
}

async function versionOf(file: string): Promise<number | null> {
  try {
    const { stdout } = await run(file, ['--version']);
    const m = /(\d+)(?:\.\d+)?/.exec(stdout);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Runs a PostgreSQL client program; its stderr becomes the error message when it fails. */
export async function runPgTool(tool: PgTool, args: readonly string[]): Promise<void> {
  try {
    await run(tool.path, [...args], { maxBuffer: 16 * 1024 * 1024 });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`${path.basename(tool.path)} failed: ${(err.stderr || err.message).trim()}`, { cause: e });
  }
}
