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
import { changedFiles, createWorkspace, snapshot, usage, wipe } from './workspace-fs';

/**
 * The `namespace` adapter (ADR 0018): each command runs under Debian's bubblewrap in fresh user,
 * mount, PID, network, IPC, UTS and cgroup namespaces — no network (the network namespace, made by
 * util-linux `unshare` just before bubblewrap, has only its loopback, and that stays down), an
 * unprivileged host uid, no capability, a read-only view of a fixed base filesystem (/usr and the
 * loader's /etc files; never /etc/shadow, the project, $HOME or another workspace), the
 * environment's workspace as the only writable mount and a size-capped tmpfs at /tmp. Limits are
 * rlimits set by `prlimit` inside the sandbox (CPU, address space, processes, file size, open
 * files) plus the service's own wall-clock kill, output cap and workspace quota probe.
 *
 * Per command: `unshare --map-current-user --net -- bwrap … -- prlimit … -- <command>` (three
 * execs and bubblewrap's two forks). A network namespace made by `unshare` keeps its loopback down
 * (bubblewrap's own `--unshare-net` would bring it up), and it belongs to the outer user namespace,
 * so even a capability in bubblewrap's inner one could not bring `lo` up.
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
  /** Names a command may set (the allowlist of request-checks.ts plus the operator's). */
  readonly envAllowlist: readonly string[];
  /** When the service runs as root: first host uid of the per-environment pool. Default 200000. */
  readonly hostUidBase?: number;
  /** Pool size; environments alive at once. Default 1000. */
  readonly hostUidCount?: number;
}

interface LiveEnv {
  readonly handle: EnvironmentHandle;
  readonly spec: EnvironmentSpec;
  readonly dir: string;
  readonly hostUid: number;
  readonly hostGid: number;
  readonly slot: number | null;
  running: Set<AbortController>;
  destroyed: boolean;
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
  private readonly usedSlots = new Set<number>();
  private nextSlot = 0;
  private baseArgs: string[] | null = null;
  private rootReady: Promise<string> | null = null;
  private etcCopy: BaseEtc | null = null;

  constructor(private readonly opts: NamespaceOptions) {
    this.bwrap = opts.bwrapPath ?? '/usr/bin/bwrap';
    this.prlimit = opts.prlimitPath ?? '/usr/bin/prlimit';
    this.unshare = opts.unsharePath ?? '/usr/bin/unshare';
    this.asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
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
      const r = await this.execute(env, { argv: ['true'] }).catch((e: unknown) => ({
        exitCode: -1,
        stderr: Buffer.from(e instanceof Error ? e.message : String(e)),
      }));
      if (r.exitCode !== 0)
        throw new Error(
          `unshare/bubblewrap could not start a sandbox (exit ${r.exitCode}): ${Buffer.from(r.stderr).toString('utf8').trim()} — unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1), util-linux may be older than 2.38 (unshare --map-current-user), or a parent directory of ${await this.workspaceRoot()} is not searchable (o+x) by the sandbox uid`,
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
    try {
      await createWorkspace(dir, spec.files ?? [], this.asRoot ? { uid: hostUid, gid: hostGid } : null);
    } catch (e) {
      if (slot !== null) this.usedSlots.delete(slot);
      await wipe(dir).catch(() => undefined);
      throw e;
    }
    const handle: EnvironmentHandle = {
      id,
      adapter: this.name,
      leaseExpiresAt: new Date(Date.now() + spec.leaseSeconds * 1000).toISOString(),
    };
    this.envs.set(id, { handle, spec, dir, hostUid, hostGid, slot, running: new Set(), destroyed: false });
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

  private async base(): Promise<string[]> {
    if (this.baseArgs) return this.baseArgs;
    const args: string[] = ['--ro-bind', '/usr', '/usr'];
    for (const top of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
      const p = `/${top}`;
      const st = await fs.promises.lstat(p).catch(() => null);
      if (!st) continue;
      if (st.isSymbolicLink()) args.push('--symlink', await fs.promises.readlink(p), p);
      else if (st.isDirectory()) args.push('--ro-bind', p, p);
    }
    this.baseArgs = args;
    return args;
  }

  private async baseEtc(): Promise<BaseEtc> {
    this.etcCopy ??= new BaseEtc(await this.workspaceRoot(), ETC_FILES, { passwd: PASSWD, group: GROUP });
    return this.etcCopy;
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
    const baseArgs = await this.base();
    const nproc = limits.maxProcesses + 2 + (await this.processesOf(env.hostUid));
    const before = await snapshot(env.dir);
    const etc = await (await this.baseEtc()).acquire();
    let dirFd: number;
    try {
      // Synchronous: one open(2) of a local directory, cheaper than a thread-pool round trip.
      dirFd = fs.openSync(env.dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
    } catch (e) {
      etc.release();
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
    const args = [
      // A fresh user namespace mapping only the launching uid, owning a fresh network namespace
      // whose loopback is down; bubblewrap then makes every other namespace (its own user namespace
      // nested inside) and must not make a network namespace of its own (it would bring `lo` up).
      '--map-current-user',
      '--net',
      '--',
      this.bwrap,
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
      ...baseArgs,
      '--ro-bind',
      etc.dir,
      '/etc',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--size',
      String(limits.tmpBytes),
      '--tmpfs',
      '/tmp',
      '--bind-fd',
      '3',
      '/workspace',
      // Nothing else is writable: /dev/shm is its own size-capped tmpfs, and the tmpfs bubblewrap
      // builds the root (and /dev) on, which has no size cap, becomes read-only.
      '--size',
      String(limits.tmpBytes),
      '--tmpfs',
      '/dev/shm',
      '--remount-ro',
      '/dev',
      '--remount-ro',
      '/',
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
    try {
      const raw = await runLauncher(
        {
          file: this.unshare,
          args,
          env: {},
          extraFds: [dirFd],
          ...(this.asRoot ? { uid: env.hostUid, gid: env.hostGid } : {}),
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
      const after = await snapshot(env.dir);
      return executionResult(raw, c, await changedFiles(env.dir, before, after, command.collectChangedUpToBytes ?? 0));
    } finally {
      env.running.delete(controller);
      opts.signal?.removeEventListener('abort', onAbort);
      fs.closeSync(dirFd);
      etc.release();
    }
  }

  async destroy(handle: EnvironmentHandle): Promise<void> {
    const env = this.envs.get(handle.id);
    if (!env) return;
    env.destroyed = true;
    for (const c of env.running) c.abort();
    // Wait (bounded) for running commands to be reaped before the workspace goes.
    for (let i = 0; i < 100 && env.running.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
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
    let n = await (await this.baseEtc()).removeOrphans();
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
