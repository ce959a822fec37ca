import * as fs from 'node:fs';
import * as path from 'node:path';
import { BASE_PATH, ETC_FILES, TOP_LEVEL } from './sandbox-base';

/**
 * A long-lived process (an MCP server over stdio; ADR 0048) run under the sandbox's bubblewrap with
 * the view of a sandboxed command: `/usr` and the host's top-level library links read-only, the
 * loader's `/etc` files (sandbox-base.ts `ETC_FILES`), a fresh `/proc`, `/dev` and `/tmp`, and
 * nothing of the host besides the declared paths — so not the platform's data directory, its
 * artifacts, backups or `.env`, which are masked even where a declared path would contain them.
 */
export interface IsolatedProcessSpec {
  readonly command: string;
  readonly args: readonly string[];
  /** Inside one of the paths (config validation); null: `/`. */
  readonly cwd: string | null;
  /** The process's whole environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Absolute host paths shown read-only at the same place. */
  readonly paths: readonly string[];
  /** Absolute host paths shown writable at the same place. */
  readonly writablePaths: readonly string[];
  /** false: a network namespace of its own (only its own loopback). */
  readonly network: boolean;
  /** Host paths the process must never see (masked inside a declared path; a path inside one is refused). */
  readonly hidden: readonly string[];
  readonly hostname: string;
}

/** How to start the launcher: the file, its arguments, and the host uid/gid to run it as. */
export interface IsolatedLaunch {
  readonly file: string;
  readonly args: readonly string[];
  readonly uid: number | null;
  readonly gid: number | null;
}

/** The unprivileged host identity an isolated process gets when the platform runs as root. */
export const ISOLATED_UID = 65534;
export const ISOLATED_GID = 65534;

const inside = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/** Both the path and where its links lead (a declared `node_modules` may be a link). */
function forms(p: string): string[] {
  const abs = path.resolve(p);
  try {
    const real = fs.realpathSync(abs);
    return real === abs ? [abs] : [abs, real];
  } catch {
    return [abs];
  }
}

/**
 * Why these paths may not be shown (one of them is, or is inside, a hidden path such as the data
 * directory), or null. Checked when the servers are loaded, so such an entry never starts.
 */
export function refusedIsolatedPath(paths: readonly string[], hidden: readonly string[]): string | null {
  for (const p of paths)
    for (const h of hidden)
      for (const pf of forms(p))
        for (const hf of forms(h))
          if (inside(pf, hf)) return `${p} is inside ${h}, which an isolated process never sees`;
  return null;
}

/** bubblewrap's mounts of the base view: /usr, the top-level links or directories, the /etc files. */
function baseMounts(network: boolean): string[] {
  const out = ['--ro-bind', '/usr', '/usr'];
  for (const top of TOP_LEVEL) {
    const st = fs.lstatSync(`/${top}`, { throwIfNoEntry: false });
    if (st?.isSymbolicLink()) out.push('--symlink', fs.readlinkSync(`/${top}`), `/${top}`);
    else if (st?.isDirectory()) out.push('--ro-bind', `/${top}`, `/${top}`);
  }
  // With the host's network, name resolution needs the resolver's files too.
  for (const f of [...ETC_FILES, ...(network ? ['resolv.conf', 'hosts', 'gai.conf'] : [])])
    out.push('--ro-bind-try', `/etc/${f}`, `/etc/${f}`);
  return out;
}

/** The declared paths, the command when nothing else shows it, and the masks over hidden paths. */
function declaredMounts(spec: IsolatedProcessSpec): string[] {
  const out: string[] = [];
  for (const p of spec.paths) out.push('--ro-bind', p, p);
  for (const p of spec.writablePaths) out.push('--bind', p, p);
  const shown = ['/usr', ...TOP_LEVEL.map((t) => `/${t}`), ...spec.paths, ...spec.writablePaths];
  const command = forms(spec.command).at(-1)!;
  if (path.isAbsolute(spec.command) && !shown.some((d) => forms(d).some((f) => inside(command, f))))
    out.push('--ro-bind', command, command);
  for (const h of spec.hidden) {
    const st = fs.statSync(h, { throwIfNoEntry: false });
    if (!st || !shown.some((d) => forms(d).some((f) => forms(h).some((hf) => inside(hf, f))))) continue;
    // Seen through a declared path: an empty tmpfs over a directory, /dev/null over a file.
    out.push(...(st.isDirectory() ? ['--tmpfs', h] : ['--ro-bind', '/dev/null', h]));
  }
  return out;
}

/**
 * The launcher of one isolated process: bubblewrap with fresh user, mount, PID, IPC, UTS and cgroup
 * namespaces (and a network namespace unless `network`), no capability, dying with its parent, a
 * new session (no terminal injection), a clean environment. Run as root, it runs as `nobody`.
 */
export function namespaceLaunch(spec: IsolatedProcessSpec, bwrapPath = '/usr/bin/bwrap'): IsolatedLaunch {
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const args = [
    '--unshare-user',
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(spec.network ? [] : ['--unshare-net']),
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    spec.hostname,
    ...baseMounts(spec.network),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    ...declaredMounts(spec),
    '--chdir',
    spec.cwd ?? '/',
    '--clearenv',
    ...Object.entries({ PATH: BASE_PATH, TMPDIR: '/tmp', HOME: '/tmp', ...spec.env }).flatMap(([k, v]) => [
      '--setenv',
      k,
      v,
    ]),
    '--',
    spec.command,
    ...spec.args,
  ];
  return {
    file: bwrapPath,
    args,
    uid: asRoot ? ISOLATED_UID : null,
    gid: asRoot ? ISOLATED_GID : null,
  };
}
