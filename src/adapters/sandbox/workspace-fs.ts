import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ChangedFile, SeedFile } from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import { normalizeRelativeDir } from '../../domain/sandbox/request-checks';

/**
 * Host-side handling of a sandbox workspace directory. Everything here runs only while no sandboxed
 * process is alive (before a command or after its whole process tree is gone), never follows a
 * symlink, and treats every name inside as untrusted.
 */

export interface FileStamp {
  readonly size: number;
  readonly sha256: string;
}

const MAX_WALK_ENTRIES = 10_000;
const MAX_WALK_DEPTH = 32;
/**
 * Files up to this size are hashed with synchronous reads (an open, a read or two and a close: a few
 * microseconds each, where the thread pool costs a round trip per call), up to `SYNC_HASH_BUDGET`
 * bytes per walk; larger files, and everything past the budget, are read through the thread pool so
 * a big workspace never blocks the service for long.
 */
const SYNC_HASH_MAX_FILE = 256 * 1024;
const SYNC_HASH_BUDGET = 8 * 1024 * 1024;

/**
 * Creates `<dir>` (mode 0700, or 0755 then chowned when a sandbox uid is given) and writes the seed
 * files. Returns what `snapshot(dir)` would find right after, computed from the bytes written rather
 * than read back: the first command's "before" state.
 */
export async function createWorkspace(
  dir: string,
  files: readonly SeedFile[],
  owner: { uid: number; gid: number } | null,
  /** The directory already exists (a workspace tmpfs mounted by workspace-quota.ts). */
  exists = false,
): Promise<Map<string, FileStamp>> {
  const stamps = new Map<string, FileStamp>();
  if (!exists) await fs.promises.mkdir(dir, { recursive: false, mode: 0o700 });
  for (const f of files) {
    const n = normalizeRelativeDir(f.path);
    if (!n.ok || n.path === '.')
      throw new ExecutionRequestError('path_outside_workspace', `seed file ${f.path}: invalid path`);
    const target = path.join(dir, n.path);
    await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const h = await fs.promises.open(
      target,
      fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW,
      0o600,
    );
    const content = Buffer.from(f.contentBase64, 'base64');
    try {
      await h.writeFile(content);
    } finally {
      await h.close();
    }
    stamps.set(n.path, { size: content.length, sha256: createHash('sha256').update(content).digest('hex') });
  }
  if (owner) await chownTree(dir, owner.uid, owner.gid);
  return stamps;
}

async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  await fs.promises.lchown(dir, uid, gid);
  for (const e of await fs.promises.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await chownTree(p, uid, gid);
    else await fs.promises.lchown(p, uid, gid);
  }
}

/**
 * Opens `full` (a path under `root`, whose real path is `rootReal`) and refuses it unless the
 * descriptor really is inside the workspace. `O_NOFOLLOW` covers only the last component: a sandbox
 * that swaps a directory of the path for a symlink (to /etc, say) between the walk and the open
 * would otherwise have the service — root, outside the sandbox — read a host file for it and return
 * its content as a changed file. The kernel's own name of the opened file settles it.
 */
export function openInside(rootReal: string, full: string, flags: number): number {
  const fd = fs.openSync(full, flags | fs.constants.O_NOFOLLOW);
  let real: string;
  try {
    real = fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    real = '';
  }
  if (real !== rootReal && !real.startsWith(`${rootReal}/`)) {
    fs.closeSync(fd);
    throw new Error(`${full} resolves outside the workspace`);
  }
  return fd;
}

const readFd = (fd: number, buf: Buffer) =>
  new Promise<number>((resolve, reject) =>
    fs.read(fd, buf, 0, buf.length, null, (e, n) => (e ? reject(e) : resolve(n))),
  );

async function hashFile(rootReal: string, full: string): Promise<{ sha256: string; size: number }> {
  const fd = openInside(rootReal, full, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const hash = createHash('sha256');
    let size = 0;
    const buf = Buffer.alloc(64 * 1024);
    for (;;) {
      const bytesRead = await readFd(fd, buf);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      size += bytesRead;
    }
    return { sha256: hash.digest('hex'), size };
  } finally {
    fs.closeSync(fd);
  }
}

/** A small regular file's hash with synchronous reads, or null when it is not one (or is larger). */
function hashSmallFileSync(
  rootReal: string,
  full: string,
  budget: { bytes: number },
): { sha256: string; size: number } | null {
  const fd = openInside(rootReal, full, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > SYNC_HASH_MAX_FILE || st.size > budget.bytes) return null;
    const buf = Buffer.allocUnsafe(st.size + 1); // one byte more: a file that grew is read to its end
    let size = 0;
    for (let n; (n = fs.readSync(fd, buf, size, buf.length - size, null)) > 0;) {
      size += n;
      if (size === buf.length) return null; // grew past what was checked: the streamed path reads it
    }
    budget.bytes -= size;
    return { sha256: createHash('sha256').update(buf.subarray(0, size)).digest('hex'), size };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Regular files under `dir` (relative `a/b` paths), with size and SHA-256. Symlinks and specials are
 * skipped. Directories are listed synchronously (metadata only, at most `MAX_WALK_ENTRIES` entries
 * in all): a workspace is usually a handful of entries, where a thread-pool round trip per directory
 * was most of the walk.
 */
export async function snapshot(dir: string): Promise<Map<string, FileStamp>> {
  const out = new Map<string, FileStamp>();
  let seen = 0;
  const budget = { bytes: SYNC_HASH_BUDGET };
  const rootReal = fs.realpathSync(dir);
  const walk = async (d: string, depth: number): Promise<void> => {
    if (depth > MAX_WALK_DEPTH) return;
    let entries: fs.Dirent[];
    try {
      // Listed through a checked descriptor: a directory swapped for a symlink is not followed.
      const fd = openInside(rootReal, d, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
      try {
        entries = fs.readdirSync(`/proc/self/fd/${fd}`, { withFileTypes: true });
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      return; // a directory the sandbox made unreadable: nothing to report from it
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (++seen > MAX_WALK_ENTRIES) return;
      const full = path.join(d, e.name);
      if (e.isDirectory()) await walk(full, depth + 1);
      else if (e.isFile()) {
        try {
          const { sha256, size } = hashSmallFileSync(rootReal, full, budget) ?? (await hashFile(rootReal, full));
          out.set(path.relative(dir, full).split(path.sep).join('/'), { size, sha256 });
        } catch {
          /* unreadable or swapped: skipped */
        }
      }
    }
  };
  await walk(dir, 0);
  return out;
}

/** Files new or different in `after`; with content (base64) while the running total stays within `collectUpTo`. */
export async function changedFiles(
  dir: string,
  before: Map<string, FileStamp>,
  after: Map<string, FileStamp>,
  collectUpTo: number,
): Promise<ChangedFile[]> {
  const out: ChangedFile[] = [];
  let collected = 0;
  const rootReal = fs.realpathSync(dir);
  for (const [rel, stamp] of after) {
    const prior = before.get(rel);
    if (prior && prior.sha256 === stamp.sha256) continue;
    let contentBase64: string | undefined;
    if (collected + stamp.size <= collectUpTo) {
      try {
        const fd = openInside(rootReal, path.join(dir, rel), fs.constants.O_RDONLY);
        try {
          const buf = await new Promise<Buffer>((resolve, reject) =>
            fs.readFile(fd, (e, b) => (e ? reject(e) : resolve(b))),
          );
          if (createHash('sha256').update(buf).digest('hex') === stamp.sha256) {
            contentBase64 = buf.toString('base64');
            collected += buf.length;
          }
        } finally {
          fs.closeSync(fd);
        }
      } catch {
        /* not collected */
      }
    }
    out.push({
      path: rel,
      sizeBytes: stamp.size,
      sha256: stamp.sha256,
      ...(contentBase64 !== undefined ? { contentBase64 } : {}),
    });
  }
  return out;
}

/** Bytes and entries used under `dir` (lstat; never follows links). Stops counting past the limits. */
export async function usage(
  dir: string,
  stopAt: { bytes: number; files: number },
): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  const walk = async (d: string, depth: number): Promise<void> => {
    if (depth > MAX_WALK_DEPTH || bytes > stopAt.bytes || files > stopAt.files) return;
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      files++;
      if (bytes > stopAt.bytes || files > stopAt.files) return;
      const full = path.join(d, e.name);
      if (e.isDirectory()) await walk(full, depth + 1);
      else {
        try {
          bytes += (await fs.promises.lstat(full)).blocks * 512;
        } catch {
          /* gone */
        }
      }
    }
  };
  await walk(dir, 0);
  return { bytes, files };
}

/** Removes a workspace, making read-only directories writable first (a sandbox may chmod its own files). */
export async function wipe(dir: string): Promise<void> {
  const fix = async (d: string): Promise<void> => {
    await fs.promises.chmod(d, 0o700).catch(() => undefined);
    const entries = await fs.promises.readdir(d, { withFileTypes: true }).catch(() => [] as fs.Dirent[]);
    for (const e of entries) if (e.isDirectory()) await fix(path.join(d, e.name));
  };
  await fix(dir);
  await fs.promises.rm(dir, { recursive: true, force: true, maxRetries: 3 });
}
