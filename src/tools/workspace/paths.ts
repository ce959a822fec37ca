import * as fs from 'node:fs';
import * as path from 'node:path';
import type { NormalizeResult } from '../tool-extensions';

export const PATH_OUTSIDE_WORKSPACE = 'path_outside_workspace';
const MAX_PATH_CHARS = 512;
const SAFE_SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * String-level check of a workspace-relative path (plan §18.4): refuses empty, absolute (POSIX,
 * Windows drive or UNC), NUL-containing and `..`-containing paths, and returns the canonical
 * `a/b/c` form. The real-path check at execution time catches symlink escapes.
 */
export function normalizeWorkspacePath(
  raw: unknown,
  allowRoot = false,
): { ok: true; path: string } | { ok: false; message: string } {
  if (typeof raw !== 'string') return { ok: false, message: 'path must be a string' };
  if (raw.length > MAX_PATH_CHARS) return { ok: false, message: `path is longer than ${MAX_PATH_CHARS} characters` };
  if (raw.includes('\0')) return { ok: false, message: 'path contains a NUL byte' };
  if (raw.startsWith('/') || raw.startsWith('\\') || /^[A-Za-z]:/.test(raw) || raw.startsWith('~')) {
    return { ok: false, message: `absolute paths are not allowed: ${JSON.stringify(raw)}` };
  }
  const segments = raw.split(/[/\\]+/).filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..'))
    return { ok: false, message: `path traversal ('..') is not allowed: ${JSON.stringify(raw)}` };
  if (segments.length === 0 && !allowRoot) return { ok: false, message: 'path names no file' };
  return { ok: true, path: segments.join('/') };
}

/** Normalizes the `path` argument of a workspace tool (pipeline step 5). */
export function normalizePathArgument(args: Record<string, unknown>, allowRoot = false): NormalizeResult {
  if (args.path === undefined && allowRoot) return { ok: true, value: { ...args, path: '' } };
  const n = normalizeWorkspacePath(args.path, allowRoot);
  if (!n.ok) return { ok: false, errorCode: PATH_OUTSIDE_WORKSPACE, message: n.message };
  return { ok: true, value: { ...args, path: n.path } };
}

export class PathOutsideWorkspace extends Error {
  readonly code = PATH_OUTSIDE_WORKSPACE;
}

/** A directory name for an identifier: itself when harmless, else a hex encoding (never `..` or `/`). */
function dirName(id: string): string {
  return SAFE_SEGMENT.test(id) ? id : `x${Buffer.from(id, 'utf8').toString('hex').slice(0, 120)}`;
}

/** The per-session workspace: `<root>/<tenant>/<session>`, created on first use. Returns its real path. */
export async function sessionWorkspace(root: string, tenantId: string, sessionId: string): Promise<string> {
  const dir = path.join(root, dirName(tenantId), dirName(sessionId));
  await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
  return fs.promises.realpath(dir);
}

function inside(workspace: string, real: string): boolean {
  return real === workspace || real.startsWith(workspace + path.sep);
}

/**
 * The real path of an existing entry, refused when it resolves outside the workspace (a symlink
 * escape, checked on real paths, not strings). Returns null when it does not exist.
 */
export async function resolveExisting(workspace: string, rel: string): Promise<string | null> {
  const candidate = path.join(workspace, rel);
  let real: string;
  try {
    real = await fs.promises.realpath(candidate);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      // A dangling symlink is still an escape attempt when it points outside.
      const link = await fs.promises.readlink(candidate).catch(() => null);
      if (link !== null) {
        const target = path.resolve(path.dirname(candidate), link);
        if (!inside(workspace, target))
          throw new PathOutsideWorkspace(`${rel} is a symlink that points outside the workspace`);
      }
      return null;
    }
    throw e;
  }
  if (!inside(workspace, real)) throw new PathOutsideWorkspace(`${rel} resolves outside the workspace`);
  return real;
}

/**
 * Prepares `rel` for writing: every existing ancestor must resolve inside the workspace, missing
 * directories are created one at a time (each re-checked), and an existing file must too.
 */
export async function resolveForWrite(workspace: string, rel: string): Promise<string> {
  const segments = rel.split('/');
  let current = workspace;
  for (const segment of segments.slice(0, -1)) {
    const next = path.join(current, segment);
    const real = await resolveExisting(workspace, path.relative(workspace, next));
    if (real === null) {
      await fs.promises.mkdir(next, { mode: 0o700 });
      current = await fs.promises.realpath(next);
      if (!inside(workspace, current)) throw new PathOutsideWorkspace(`${rel} resolves outside the workspace`);
    } else {
      const st = await fs.promises.stat(real);
      if (!st.isDirectory()) throw new PathOutsideWorkspace(`${path.relative(workspace, next)} is not a directory`);
      current = real;
    }
  }
  const file = path.join(current, segments[segments.length - 1]);
  const existing = await resolveExisting(workspace, path.relative(workspace, file));
  return existing ?? file;
}
