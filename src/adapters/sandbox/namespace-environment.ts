import { execFile, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type {
  EnvironmentHandle,
  EnvironmentSpec,
  ExecuteOptions,
  ExecutionCommand,
  ExecutionEnvironment,
  ExecutionResult,
} from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import { checkArgv, checkEnv, normalizeRelativeDir } from '../../domain/sandbox/request-checks';
import { classify, executionResult, runLauncher } from './process-runner';
import { BaseEtc } from './base-etc';
import { HeldNetworkNamespace } from './network-namespace';
import { loadLinuxProcessControls, type LinuxProcessControls } from './linux-process';
import { changedFiles, createWorkspace, snapshot, usage, wipe, type FileStamp } from './workspace-fs';

/**
 * The `namespace` adapter (ADR 0018): each command runs under Debian's bubblewrap in fresh user,
 * mount, PID, IPC, UTS and cgroup namespaces and its environment's network namespace — no network
 * (the network namespace has only its loopback, and that stays down), an
 * unprivileged host uid, no capability, a read-only view of a fixed base filesystem (/usr and the
 * loader's /etc files; never /etc/shadow, the project, $HOME or another workspace), the
 * environment's workspace as the only writable mount and a size-capped tmpfs at /tmp. Limits are
 * rlimits set by `prlimit` inside the sandbox (CPU, address space, processes, file size, open
 * files) plus the service's own wall-clock kill, output cap and workspace quota probe.
 *
 * The network namespace keeps its loopback down (bubblewrap's own `--unshare-net` would bring it
 * up) and never belongs to the sandbox's user namespace, so a capability in bubblewrap's inner
 * namespace could not bring `lo` up. Run as root, each environment gets one at provision, made by
 * the service's own `unshare(2)` in the host's user namespace and held by a descriptor of the
 * service (network-namespace.ts); per command the service forks bubblewrap from it (`setns` around
 * the spawn, linux-process.ts) as the environment's uid: `bwrap … -- prlimit … -- <command>`, two
 * execs and bubblewrap's two forks. Where koffi cannot load, each command's launcher makes a fresh
 * one: `unshare --net --setgid G --setuid U -- bwrap …` as root, otherwise
 * `unshare --map-current-user --net -- bwrap …` (owned by an outer user namespace mapping only the
 * service's uid).
 *
 * The filesystem is a few mounts (bubblewrap parses all of /proc/self/mountinfo for each bind, so
 * their number is most of its setup cost): the root is one read-only bind of a prepared base
 * directory (the /etc copy, the top-level links, empty mountpoints and /dev's entries; base-etc.ts),
 * then read-only /usr, a fresh /proc, /dev, the workspace and two size-capped tmpfs. /dev is one bind
 * of the base's `dev/` holding copies of the six device nodes when the service runs as root on a
 * filesystem that allows devices (one mount instead of bubblewrap's `--dev` tmpfs, six binds and a
 * remount), else a bind of each host device onto its mountpoint in the read-only root.
 *
 * This is a shared-kernel boundary: `AUTH_MODE=token` refuses it unless the operator overrides
 * (see sandbox-startup.ts); the container adapter with gVisor is the production choice.
 */
export interface NamespaceOptions {
  /** Directory that holds one sub-directory per environment (`$AGENT_DATA_DIR/sandboxes`). */
  readonly root: string;
  readonly bwrapPath?: string;
  readonly prlimitPath?: string;
  readonly unsharePath?: string;
  /**
   * Whether the service, as root, may make each environment's network namespace and fork
   * bubblewrap from it itself (`unshare`/`setns` through linux-process.ts) instead of an `unshare`
   * exec per command. Default: when koffi loads; `false` forces the `unshare` launcher.
   */
  readonly processControls?: boolean;
  /** Names a command may set (the allowlist of request-checks.ts plus the operator's). */
  readonly envAllowlist: readonly string[];
  /** When the service runs as root: first host uid of the per-environment pool. Default 200000. */
  readonly hostUidBase?: number;
  /** Pool size; environments alive at once. Default 1000. */
  readonly hostUidCount?: number;
  /**
   * Whether /dev may be one bind of copies of the device nodes. Default: when the service runs as
   * root and the workspaces' filesystem allows devices; `false` binds each host device instead.
   */
  readonly deviceNodes?: boolean;
}

interface LiveEnv {
  readonly handle: EnvironmentHandle;
  readonly spec: EnvironmentSpec;
  readonly dir: string;
  readonly hostUid: number;
  readonly hostGid: number;
  readonly slot: number | null;
  /**
   * As root with koffi: the environment's network namespace, made at provision and entered by each
   * command (network-namespace.ts); `null` otherwise (each command's launcher makes its own).
   */
  readonly net: HeldNetworkNamespace | null;
  running: Set<AbortController>;
  destroyed: boolean;
  /**
   * The workspace as the last command left it (or as provisioned): its next command's "before"
   * state, so that command does not walk and hash the workspace first. Only commands write the
   * workspace (the service seeds it at provision, nothing else), so it is valid while no two
   * commands overlap; `null` when they did. One race remains, as it did for every "after": the
   * result is built once the sandbox's stdout and stderr are closed and bubblewrap has exited, and
   * its PID 1 kills what is left of the sandbox a moment later, so a process that had closed both
   * streams could still write then; such a write shows in the next command's changes (measured
   * against this state) instead of in none.
   */
  lastSnapshot: Map<string, FileStamp> | null;
  /** Commands started so far (tells whether another started while a snapshot was being taken). */
  started: number;
}

/** What a prepared base root holds (see `prepareBase`). */
interface BaseRoot {
  /** Top-level host directories (not links) bound read-only over their empty mountpoints, e.g. /lib. */
  readonly roBinds: readonly string[];
  /** Whether `dev/` holds copies of the device nodes (else empty files the host's devices are bound on). */
  readonly deviceNodes: boolean;
}

/**
 * In-sandbox root of the sandbox's own user namespace, mapped to an unprivileged host uid, with no
 * capability at all (`--cap-drop ALL`).
 */
const SANDBOX_UID = 0;
const SANDBOX_GID = 0;
/** Linux ≥ 5.14 counts RLIMIT_NPROC per user namespace (ucounts). */
const NPROC_PER_USER_NAMESPACE = (() => {
  const m = /^(\d+)\.(\d+)/.exec(os.release());
  return m !== null && (Number(m[1]) > 5 || (Number(m[1]) === 5 && Number(m[2]) >= 14));
})();
const BASE_PATH = '/usr/local/bin:/usr/bin:/bin';
/** Top-level host entries mirrored in the base root: a link as the same link, a directory bound read-only. */
const TOP_LEVEL = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];
/** The sandbox's devices (those of bubblewrap's `--dev`), with the device numbers a copy must have. */
const DEVICES: ReadonlyArray<readonly [string, number, number]> = [
  ['null', 1, 3],
  ['zero', 1, 5],
  ['full', 1, 7],
  ['random', 1, 8],
  ['urandom', 1, 9],
  ['tty', 5, 0],
];
const DEV_LINKS: ReadonlyArray<readonly [string, string]> = [
  ['fd', '/proc/self/fd'],
  ['stdin', '/proc/self/fd/0'],
  ['stdout', '/proc/self/fd/1'],
  ['stderr', '/proc/self/fd/2'],
];
/** How long a check of the host's /etc sources and top-level layout is reused (base-etc.ts). */
const BASE_RECHECK_MS = 250;
/** CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN: what `unshare --net --setgid --setuid` needs as root. */
const ROOT_NET_CAPS = (1n << 6n) | (1n << 7n) | (1n << 21n);
const PASSWD = `sandbox:x:${SANDBOX_UID}:${SANDBOX_GID}:sandbox (no capabilities, unprivileged on the host):/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`;
const GROUP = `sandbox:x:${SANDBOX_GID}:\nnogroup:x:65534:\n`;

/**
 * Entries of /etc a program needs to load and run; nothing that names a secret. The sandbox gets a
 * copy of them (with the synthetic passwd/group) in one read-only bind at /etc (base-etc.ts).
 */
const ETC_FILES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'localtime',
  'nsswitch.conf',
  'mime.types',
  'ssl/certs',
  'ssl/openssl.cnf',
  'debian_version',
  'os-release',
];

export class NamespaceExecutionEnvironment implements ExecutionEnvironment {
  readonly name = 'namespace';
  private readonly envs = new Map<string, LiveEnv>();
  private readonly bwrap: string;
  private readonly prlimit: string;
  private readonly unshare: string;
  private readonly asRoot: boolean;
  /** Root with CAP_SYS_ADMIN/SETUID/SETGID: `unshare` makes the network namespace in the host's user namespace. */
  private readonly rootNet: boolean;
  /** `setns` from the service itself (linux-process.ts): as root, when koffi loads. */
  private readonly controls: LinuxProcessControls | null;
  private readonly usedSlots = new Set<number>();
  private nextSlot = 0;
  private rootReady: Promise<string> | null = null;
  private baseCopy: BaseEtc<BaseRoot> | null = null;
  private devicesAllowed: Promise<boolean> | null = null;

  constructor(private readonly opts: NamespaceOptions) {
    this.bwrap = opts.bwrapPath ?? '/usr/bin/bwrap';
    this.prlimit = opts.prlimitPath ?? '/usr/bin/prlimit';
    this.unshare = opts.unsharePath ?? '/usr/bin/unshare';
    this.asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    this.rootNet = this.asRoot && (effectiveCaps() & ROOT_NET_CAPS) === ROOT_NET_CAPS;
    this.controls = this.rootNet && opts.processControls !== false ? loadLinuxProcessControls() : null;
  }

  /** Throws a clear error when bubblewrap, unshare or prlimit is missing or cannot create namespaces here. */
  async selfCheck(): Promise<void> {
    for (const bin of [this.bwrap, this.unshare, this.prlimit]) {
      try {
        await fs.promises.access(bin, fs.constants.X_OK);
      } catch {
        throw new Error(
          `${bin} is not installed or not executable; the namespace sandbox needs Debian's bubblewrap (apt-get install -y bubblewrap) and util-linux ≥ 2.38 (unshare, prlimit)`,
        );
      }
    }
    await this.workspaceRoot();
    const env = await this.provision({
      tenantId: 'self-check',
      runId: 'self-check',
      leaseSeconds: 30,
      limits: {
        wallClockSeconds: 10,
        cpuSeconds: 5,
        memoryBytes: 512 * 1024 * 1024,
        maxProcesses: 16,
        maxFileBytes: 1024 * 1024,
        workspaceBytes: 1024 * 1024,
        workspaceFiles: 100,
        tmpBytes: 1024 * 1024,
        maxOpenFiles: 64,
        maxOutputBytes: 4096,
      },
    });
    try {
      // Also opens /dev/null for writing: the device nodes (or binds) of /dev must work.
      const r = await this.execute(env, { argv: ['/bin/sh', '-c', ': >/dev/null'] }).catch((e: unknown) => ({
        exitCode: -1,
        stderr: Buffer.from(e instanceof Error ? e.message : String(e)),
      }));
      if (r.exitCode !== 0)
        throw new Error(
          `unshare/bubblewrap could not start a sandbox (exit ${r.exitCode}): ${Buffer.from(r.stderr).toString('utf8').trim()} — unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1), util-linux may be older than 2.38 (unshare --map-current-user), a parent directory of ${await this.workspaceRoot()} is not searchable (o+x) by the sandbox uid, or /dev/null cannot be opened in the sandbox`,
        );
    } finally {
      await this.destroy(env);
    }
  }

  async provision(spec: EnvironmentSpec): Promise<EnvironmentHandle> {
    const env = checkEnv(spec.env, this.opts.envAllowlist);
    if (!env.ok) throw new ExecutionRequestError(env.code, env.message);
    const id = randomUUID();
    const dir = path.join(await this.workspaceRoot(), id);
    let slot: number | null = null;
    let hostUid = process.getuid?.() ?? 0;
    let hostGid = process.getgid?.() ?? 0;
    if (this.asRoot) {
      slot = this.allocateSlot();
      hostUid = (this.opts.hostUidBase ?? 200_000) + slot;
      hostGid = hostUid;
    }
    let seeded: Map<string, FileStamp>;
    let net: HeldNetworkNamespace | null = null;
    try {
      if (this.controls) net = HeldNetworkNamespace.create(this.controls);
      seeded = await createWorkspace(dir, spec.files ?? [], this.asRoot ? { uid: hostUid, gid: hostGid } : null);
    } catch (e) {
      net?.close();
      if (slot !== null) this.usedSlots.delete(slot);
      await wipe(dir).catch(() => undefined);
      throw e;
    }
    const handle: EnvironmentHandle = {
      id,
      adapter: this.name,
      leaseExpiresAt: new Date(Date.now() + spec.leaseSeconds * 1000).toISOString(),
    };
    this.envs.set(id, {
      handle,
      spec,
      dir,
      hostUid,
      hostGid,
      slot,
      net,
      running: new Set(),
      destroyed: false,
      lastSnapshot: seeded,
      started: 0,
    });
    return handle;
  }

  /**
   * Where workspaces live: `opts.root`, unless the service runs as root and some parent of it is not
   * searchable by others (a 0700 data directory): bubblewrap resolves the workspace as the sandbox's
   * unprivileged uid, so then a 0711 directory under the system temp directory is used instead.
   */
  workspaceRoot(): Promise<string> {
    this.rootReady ??= (async () => {
      await fs.promises.mkdir(this.opts.root, { recursive: true, mode: 0o711 });
      if (!this.asRoot || (await searchableByOthers(this.opts.root))) return this.opts.root;
      const alt = path.join(
        os.tmpdir(),
        `agent-sandboxes-${createHash('sha256').update(this.opts.root).digest('hex').slice(0, 12)}`,
      );
      await fs.promises.mkdir(alt, { recursive: true, mode: 0o711 });
      await fs.promises.chmod(alt, 0o711);
      return alt;
    })();
    return this.rootReady;
  }

  private allocateSlot(): number {
    const count = this.opts.hostUidCount ?? 1000;
    for (let i = 0; i < count; i++) {
      const s = (this.nextSlot + i) % count;
      if (!this.usedSlots.has(s)) {
        this.usedSlots.add(s);
        this.nextSlot = (s + 1) % count;
        return s;
      }
    }
    throw new ExecutionRequestError('sandbox_capacity', `all ${count} sandbox slots are in use`);
  }

  private live(handle: EnvironmentHandle): LiveEnv {
    const env = this.envs.get(handle.id);
    if (!env || env.destroyed)
      throw new ExecutionRequestError('environment_not_found', `no live environment ${handle.id}`);
    return env;
  }

  /**
   * The prepared base root (a copy per version of the host's sources; base-etc.ts): `etc/` (the
   * copy), the host's top-level links, empty mountpoints, and `dev/`.
   */
  private async baseRoot(): Promise<BaseEtc<BaseRoot>> {
    this.baseCopy ??= new BaseEtc<BaseRoot>(
      await this.workspaceRoot(),
      ETC_FILES,
      { passwd: PASSWD, group: GROUP },
      '/etc',
      {
        etcDir: 'etc',
        prepare: (dir) => this.prepareBase(dir),
        // A top-level entry turning from a link into a directory (or back) changes the layout.
        signature: () =>
          TOP_LEVEL.map((t) => {
            const st = fs.lstatSync(`/${t}`, { throwIfNoEntry: false });
            return st ? `${t}:${st.mode}:${st.ino}` : `${t}:-`;
          }).join(','),
      },
      BASE_RECHECK_MS,
    );
    return this.baseCopy;
  }

  private async prepareBase(dir: string): Promise<BaseRoot> {
    const roBinds: string[] = [];
    for (const top of TOP_LEVEL) {
      const st = await fs.promises.lstat(`/${top}`).catch(() => null);
      if (!st) continue;
      if (st.isSymbolicLink()) await fs.promises.symlink(await fs.promises.readlink(`/${top}`), path.join(dir, top));
      else if (st.isDirectory()) {
        await fs.promises.mkdir(path.join(dir, top), { mode: 0o755 });
        roBinds.push(`/${top}`);
      }
    }
    for (const m of ['usr', 'proc', 'tmp', 'workspace', 'dev', 'dev/shm'])
      await fs.promises.mkdir(path.join(dir, m), { mode: 0o755 });
    const dev = path.join(dir, 'dev');
    for (const [name, target] of DEV_LINKS) await fs.promises.symlink(target, path.join(dev, name));
    this.devicesAllowed ??=
      this.asRoot && this.opts.deviceNodes !== false ? allowsDevices(dir) : Promise.resolve(false);
    const deviceNodes = (await this.devicesAllowed) && (await copyDeviceNodes(dev));
    if (!deviceNodes)
      for (const [name] of DEVICES) {
        await fs.promises.rm(path.join(dev, name), { force: true });
        await fs.promises.writeFile(path.join(dev, name), '', { mode: 0o644, flag: 'wx' });
      }
    return { roBinds, deviceNodes };
  }

  /**
   * Processes the host uid already runs, when they count against the sandbox's RLIMIT_NPROC: only
   * for a non-root service on a kernel older than 5.14. Since 5.14 the kernel counts RLIMIT_NPROC in
   * each user namespace, so the sandbox's own namespace holds only the sandbox's processes.
   */
  private async processesOf(uid: number): Promise<number> {
    if (this.asRoot || NPROC_PER_USER_NAMESPACE) return 0;
    let n = 0;
    for (const name of await fs.promises.readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      const st = await fs.promises.stat(`/proc/${name}`).catch(() => null);
      if (st && st.uid === uid) n++;
    }
    return n;
  }

  async execute(
    handle: EnvironmentHandle,
    command: ExecutionCommand,
    opts: ExecuteOptions = {},
  ): Promise<ExecutionResult> {
    const env = this.live(handle);
    const argv = checkArgv(command.argv);
    if (!argv.ok) throw new ExecutionRequestError(argv.code, argv.message);
    const cwd = normalizeRelativeDir(command.cwd);
    if (!cwd.ok) throw new ExecutionRequestError(cwd.code, cwd.message);
    const extraEnv = checkEnv(command.env, this.opts.envAllowlist);
    if (!extraEnv.ok) throw new ExecutionRequestError(extraEnv.code, extraEnv.message);
    const limits = env.spec.limits;
    const wallSeconds = Math.max(
      0.1,
      Math.min(limits.wallClockSeconds, command.timeoutSeconds ?? limits.wallClockSeconds),
    );
    if (cwd.path !== '.') {
      const st = await fs.promises.lstat(path.join(env.dir, cwd.path)).catch(() => null);
      if (!st || !st.isDirectory())
        throw new ExecutionRequestError(
          'working_directory_not_found',
          `${cwd.path} is not a directory in the workspace`,
        );
    }
    const nproc = limits.maxProcesses + 2 + (await this.processesOf(env.hostUid));
    const before = env.running.size === 0 && env.lastSnapshot ? env.lastSnapshot : await snapshot(env.dir);
    env.lastSnapshot = null; // until this command's own "after" (a failed command leaves none)
    const base = await (await this.baseRoot()).acquire();
    const layout = base.layout!;
    let dirFd: number;
    try {
      // Synchronous: one open(2) of a local directory, cheaper than a thread-pool round trip.
      dirFd = fs.openSync(env.dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
    } catch (e) {
      base.release();
      throw e;
    }
    const vars: Record<string, string> = {
      PATH: BASE_PATH,
      HOME: '/workspace',
      TMPDIR: '/tmp',
      LANG: 'C.UTF-8',
      USER: 'sandbox',
      ...(env.spec.env ?? {}),
      ...(command.env ?? {}),
    };
    // As root with koffi (linux-process.ts), the service forks bubblewrap itself from the
    // environment's network namespace, as the environment's uid and gid with no supplementary group
    // (what libuv does for spawn's uid/gid): one exec fewer than `unshare … -- bwrap`.
    const net = env.net;
    const controls = this.controls;
    const launcher = net
      ? []
      : [
          // A fresh network namespace, whose loopback is down, that the sandbox's user namespace
          // does not own: as root, one of the host's user namespace, then the environment's uid and
          // gid (and no supplementary group); otherwise one owned by a fresh user namespace mapping
          // only the launching uid. bubblewrap then makes every other namespace (its own user
          // namespace nested inside) and must not make a network namespace of its own (it would
          // bring `lo` up).
          ...(this.rootNet
            ? ['--net', '--setgid', String(env.hostGid), '--setuid', String(env.hostUid)]
            : ['--map-current-user', '--net']),
          '--',
          this.bwrap,
        ];
    const args = [
      ...launcher,
      '--unshare-user',
      '--unshare-ipc',
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--hostname',
      'sandbox',
      '--uid',
      String(SANDBOX_UID),
      '--gid',
      String(SANDBOX_GID),
      // The root: the prepared base, read-only (it hides the tmpfs bubblewrap builds the root on).
      '--ro-bind',
      base.dir,
      '/',
      ...layout.roBinds.flatMap((p) => ['--ro-bind', p, p]),
      '--ro-bind',
      '/usr',
      '/usr',
      '--proc',
      '/proc',
      // The six devices: the base's own copies of the nodes in one bind (a root-owned directory the
      // sandbox uid cannot write to), or each host device bound onto its mountpoint in the read-only root.
      ...(layout.deviceNodes
        ? ['--dev-bind', path.join(base.dir, 'dev'), '/dev']
        : DEVICES.flatMap(([name]) => ['--dev-bind', `/dev/${name}`, `/dev/${name}`])),
      '--size',
      String(limits.tmpBytes),
      '--tmpfs',
      '/tmp',
      '--bind-fd',
      '3',
      '/workspace',
      // Nothing else is writable: /dev/shm is its own size-capped tmpfs.
      '--size',
      String(limits.tmpBytes),
      '--tmpfs',
      '/dev/shm',
      '--chdir',
      cwd.path === '.' ? '/workspace' : `/workspace/${cwd.path}`,
      '--clearenv',
      ...Object.entries(vars).flatMap(([k, v]) => ['--setenv', k, v]),
      '--',
      this.prlimit,
      `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
      `--as=${limits.memoryBytes}`,
      `--nproc=${nproc}`,
      `--fsize=${Math.min(limits.maxFileBytes, limits.workspaceBytes)}`,
      `--nofile=${limits.maxOpenFiles}`,
      '--core=0',
      '--',
      ...command.argv,
    ];
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) controller.abort();
    env.running.add(controller);
    env.started++;
    try {
      const raw = await runLauncher(
        {
          file: net ? this.bwrap : this.unshare,
          args,
          env: {},
          extraFds: [dirFd],
          // bubblewrap forked directly runs as the environment's uid; so does the launcher as root
          // without the capabilities `unshare` needs.
          ...(net || (this.asRoot && !this.rootNet) ? { uid: env.hostUid, gid: env.hostGid } : {}),
          ...(net && controls
            ? {
                spawnWith: (spawnLauncher: () => ChildProcess) => controls.inNetworkNamespace(net.fd, spawnLauncher),
              }
            : {}),
          wallClockMs: wallSeconds * 1000,
          maxOutputBytes: limits.maxOutputBytes,
          probeEveryMs: 200,
          probe: async () => {
            const u = await usage(env.dir, { bytes: limits.workspaceBytes, files: limits.workspaceFiles });
            if (u.bytes > limits.workspaceBytes)
              return { reason: 'disk', detail: `workspace exceeded ${limits.workspaceBytes} bytes` };
            if (u.files > limits.workspaceFiles)
              return { reason: 'disk', detail: `workspace exceeded ${limits.workspaceFiles} files (inode quota)` };
            return null;
          },
        },
        { signal: controller.signal, onOutput: opts.onOutput },
      );
      const c = classify(raw, true);
      if (raw.serviceReason === null && raw.exitCode === 1 && /^(bwrap|unshare):/.test(raw.stderr.toString()))
        throw new Error(`the sandbox could not start: ${raw.stderr.toString().trim().slice(0, 500)}`);
      // Kept for the next command only if this one was alone for the whole walk (no other command's
      // processes could have written while it read).
      const alone = env.running.size === 1;
      const startedBefore = env.started;
      const after = await snapshot(env.dir);
      env.lastSnapshot = alone && env.running.size === 1 && env.started === startedBefore ? after : null;
      return executionResult(raw, c, await changedFiles(env.dir, before, after, command.collectChangedUpToBytes ?? 0));
    } finally {
      env.running.delete(controller);
      opts.signal?.removeEventListener('abort', onAbort);
      fs.closeSync(dirFd);
      base.release();
      // A command that outlived its environment's destroy releases the network namespace last.
      if (env.destroyed && env.running.size === 0) env.net?.close();
    }
  }

  async destroy(handle: EnvironmentHandle): Promise<void> {
    const env = this.envs.get(handle.id);
    if (!env) return;
    env.destroyed = true;
    for (const c of env.running) c.abort();
    // Wait (bounded) for running commands to be reaped before the workspace goes.
    for (let i = 0; i < 100 && env.running.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    // Not while a command runs; one still being prepared finds it released and fails.
    if (env.running.size === 0) env.net?.close();
    await wipe(env.dir);
    if (env.slot !== null) this.usedSlots.delete(env.slot);
    this.envs.delete(handle.id);
  }

  /** Environments whose lease has expired (the service's reaper destroys them). */
  expired(nowMs: number): EnvironmentHandle[] {
    return [...this.envs.values()].filter((e) => Date.parse(e.handle.leaseExpiresAt) <= nowMs).map((e) => e.handle);
  }

  /** Leftover environment directories from a previous service process (removed at startup). */
  async removeOrphans(): Promise<number> {
    const root = await this.workspaceRoot();
    let n = await (await this.baseRoot()).removeOrphans();
    for (const name of await fs.promises.readdir(root).catch(() => [] as string[])) {
      if (!/^[0-9a-f-]{36}$/.test(name) || this.envs.has(name)) continue;
      await wipe(path.join(root, name)).catch(() => undefined);
      n++;
    }
    return n;
  }
}

/** Whether `dir` and every parent can be searched (o+x) by any uid. */
async function searchableByOthers(dir: string): Promise<boolean> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const st = await fs.promises.stat(d).catch(() => null);
    if (!st || (st.mode & 0o001) === 0) return false;
    if (d === path.dirname(d)) return true;
  }
}

/** The process's effective capabilities (CapEff of /proc/self/status); 0 when unreadable. */
function effectiveCaps(): bigint {
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? BigInt(`0x${m[1]}`) : 0n;
  } catch {
    return 0n;
  }
}

/** Whether the filesystem mount holding `dir` allows device nodes (is not mounted `nodev`). */
async function allowsDevices(dir: string): Promise<boolean> {
  try {
    const real = await fs.promises.realpath(dir);
    let options: string | null = null;
    let longest = -1;
    for (const line of (await fs.promises.readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
      const f = line.split(' ');
      if (f.length < 6) continue;
      const mountPoint = f[4].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
      const under = mountPoint === '/' || real === mountPoint || real.startsWith(`${mountPoint}/`);
      // A later line for the same mountpoint is a mount on top of the earlier one.
      if (under && mountPoint.length >= longest) {
        longest = mountPoint.length;
        options = f[5];
      }
    }
    return options !== null && !options.split(',').includes('nodev');
  } catch {
    return false;
  }
}

/**
 * Copies the host's six device nodes into `dev` (`cp -a` makes them with mknod, as root) and checks
 * that each copy is the character device it must be: the sandbox gets these devices and no other.
 */
async function copyDeviceNodes(dev: string): Promise<boolean> {
  const cp = ['/usr/bin/cp', '/bin/cp'].find((p) => fs.existsSync(p));
  if (!cp) return false;
  const copied = await new Promise<boolean>((resolve) =>
    execFile(cp, ['-a', '--', ...DEVICES.map(([name]) => `/dev/${name}`), dev], { env: {} }, (e) => resolve(!e)),
  );
  if (!copied) return false;
  for (const [name, major, minor] of DEVICES) {
    const st = await fs.promises.lstat(path.join(dev, name)).catch(() => null);
    if (!st || !st.isCharacterDevice() || st.rdev !== ((minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)))
      return false;
    await fs.promises.chmod(path.join(dev, name), 0o666);
  }
  return true;
}
