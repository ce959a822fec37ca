import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
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

/** What a gVisor launch needs beside the spec: runsc, and where its state and bundles live. */
export interface GvisorLaunchOptions {
  readonly runscPath: string;
  /** runsc's `--root` and the bundles' parent; made 0700 on first use. */
  readonly stateDir: string;
}

/** A launcher that leaves state behind: `cleanup` runs once its process has ended. */
export interface IsolatedGvisorLaunch extends IsolatedLaunch {
  readonly cleanup: () => void;
}

const ociBind = (source: string, destination: string, mode: 'ro' | 'rw') => ({
  destination,
  type: 'bind',
  source,
  options: ['rbind', mode, 'nosuid', 'nodev'],
});

/** The OCI mounts of the base view and the declared paths, hidden paths masked (as namespaceLaunch). */
function ociMounts(
  spec: IsolatedProcessSpec,
): { destination: string; type: string; source: string; options?: string[] }[] {
  const mounts = [
    { destination: '/proc', type: 'proc', source: 'proc' },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'noexec', 'mode=755', 'size=65536'] },
    { destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777'] },
    ociBind('/usr', '/usr', 'ro'),
  ];
  for (const top of TOP_LEVEL) {
    const st = fs.lstatSync(`/${top}`, { throwIfNoEntry: false });
    if (st?.isDirectory()) mounts.push(ociBind(`/${top}`, `/${top}`, 'ro'));
  }
  for (const f of [...ETC_FILES, ...(spec.network ? ['resolv.conf', 'hosts', 'gai.conf'] : [])])
    if (fs.existsSync(`/etc/${f}`)) mounts.push(ociBind(`/etc/${f}`, `/etc/${f}`, 'ro'));
  for (const p of spec.paths) mounts.push(ociBind(p, p, 'ro'));
  for (const p of spec.writablePaths) mounts.push(ociBind(p, p, 'rw'));
  const shown = ['/usr', ...TOP_LEVEL.map((t) => `/${t}`), ...spec.paths, ...spec.writablePaths];
  const command = forms(spec.command).at(-1)!;
  if (path.isAbsolute(spec.command) && !shown.some((d) => forms(d).some((f) => inside(command, f))))
    mounts.push(ociBind(command, command, 'ro'));
  for (const h of spec.hidden) {
    const st = fs.statSync(h, { throwIfNoEntry: false });
    if (!st || !shown.some((d) => forms(d).some((f) => forms(h).some((hf) => inside(hf, f))))) continue;
    mounts.push(
      st.isDirectory()
        ? { destination: h, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=755', 'size=4096'] }
        : ociBind('/dev/null', h, 'ro'),
    );
  }
  return mounts;
}

/** The read-only root: the top-level links, and an empty mountpoint (directory or file) for every mount. */
function makeRootfs(rootfs: string, mounts: readonly { destination: string; type: string; source: string }[]): void {
  fs.mkdirSync(rootfs, { recursive: true, mode: 0o755 });
  for (const top of TOP_LEVEL) {
    const st = fs.lstatSync(`/${top}`, { throwIfNoEntry: false });
    if (st?.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(`/${top}`), path.join(rootfs, top));
  }
  for (const m of mounts) {
    const at = path.join(rootfs, m.destination);
    const file = m.type === 'bind' && !fs.statSync(m.source, { throwIfNoEntry: false })?.isDirectory();
    fs.mkdirSync(file ? path.dirname(at) : at, { recursive: true, mode: 0o755 });
    if (file && !fs.existsSync(at)) fs.writeFileSync(at, '', { mode: 0o644 });
  }
}

/**
 * The launcher of one process in its own gVisor sandbox (`runsc run`, attached: it dies with the
 * launcher) from an OCI bundle like the sandbox's gvisor adapter's: the same view as `namespaceLaunch`
 * (read-only root of empty mountpoints, `/usr`, the loader's `/etc` files, the declared paths, the
 * hidden paths masked), uid `nobody`, no capability, no new privileges, and `--network=none` unless
 * `network`. The bundle and runsc's record of the sandbox are removed by `cleanup`.
 */
export function gvisorLaunch(spec: IsolatedProcessSpec, opts: GvisorLaunchOptions): IsolatedGvisorLaunch {
  fs.mkdirSync(opts.stateDir, { recursive: true, mode: 0o700 });
  const cid = `${spec.hostname}-${randomUUID().slice(0, 8)}`;
  const bundle = path.join(opts.stateDir, cid);
  const mounts = ociMounts(spec);
  makeRootfs(path.join(bundle, 'rootfs'), mounts);
  const config = {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: ISOLATED_UID, gid: ISOLATED_GID, additionalGids: [] },
      args: [spec.command, ...spec.args],
      env: Object.entries({ PATH: BASE_PATH, TMPDIR: '/tmp', HOME: '/tmp', ...spec.env }).map(([k, v]) => `${k}=${v}`),
      cwd: spec.cwd ?? '/',
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
      noNewPrivileges: true,
    },
    root: { path: 'rootfs', readonly: true },
    hostname: spec.hostname,
    mounts,
    linux: {
      namespaces: ['pid', 'ipc', 'uts', 'mount', ...(spec.network ? [] : ['network'])].map((type) => ({ type })),
      maskedPaths: ['/proc/kcore', '/proc/keys', '/proc/timer_list', '/sys/firmware'],
      readonlyPaths: ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus'],
    },
  };
  fs.writeFileSync(path.join(bundle, 'config.json'), JSON.stringify(config));
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const global = [
    '--root',
    path.join(opts.stateDir, '.runsc'),
    `--network=${spec.network ? 'host' : 'none'}`,
    '--ignore-cgroups',
    ...(asRoot ? [] : ['--rootless']),
  ];
  return {
    file: opts.runscPath,
    args: [...global, 'run', '--bundle', bundle, cid],
    uid: null,
    gid: null,
    cleanup: () => {
      execFile(opts.runscPath, [...global, 'delete', '--force', cid], { env: {} }, () =>
        fs.rm(bundle, { recursive: true, force: true }, () => undefined),
      );
    },
  };
}
