import { execFile, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type {
  EnforcedLimits,
  EnvironmentHandle,
  EnvironmentSpec,
  ExecuteOptions,
  ExecutionCommand,
  ExecutionEnvironment,
  ExecutionResult,
  ResourceLimits,
} from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import { checkArgv, checkEnv, normalizeRelativeDir } from '../../domain/sandbox/request-checks';
import { classify, executionResult, runLauncher, type RawOutcome, type RunSpec } from './process-runner';
import { BaseEtc, type EtcVersion } from './base-etc';
import { bwrapArgs, type BaseRoot } from './bwrap-args';
import { SandboxCgroups, type CommandCgroup } from './cgroups';
import { admitToCgroup, checkBridgeSocket, enforcedLimits, quotaProbe, refineWithCgroup } from './limit-report';
import { HeldNetworkNamespace } from './network-namespace';
import { loadLinuxProcessControls, type LinuxProcessControls } from './linux-process';
import {
  BASE_PATH,
  BRIDGE_MOUNT,
  DEV_LINKS,
  DEVICES,
  ETC_FILES,
  GROUP,
  makeMountpoints,
  mirrorTopLevel,
  PASSWD,
  topLevelSignature,
} from './sandbox-base';
import { PROBE_LIMITS } from './probe-limits';
import { compileSeccompFilter } from './seccomp';
import { canMountQuota, mountWorkspace, unmountWorkspace } from './workspace-quota';
import { changedFiles, createWorkspace, snapshot, wipe, type FileStamp } from './workspace-fs';

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
  /** Load the seccomp filter (seccomp.ts) for every command. Default true; `selfCheck` compiles it. */
  readonly seccomp?: boolean;
  /**
   * Memory, pids and CPU through cgroups (cgroups.ts) where the host delegates them. Default:
   * detected; `false` keeps rlimits only.
   */
  readonly cgroups?: boolean;
  /** The workspace as a size-limited tmpfs (workspace-quota.ts). Default: when the service may mount. */
  readonly workspaceQuota?: boolean;
  /** The worker's bridge sockets live here (null: no tool bridge is offered). */
  readonly bridgeDir?: string | null;
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

/** Linux ≥ 5.14 counts RLIMIT_NPROC per user namespace (ucounts). */
const NPROC_PER_USER_NAMESPACE = (() => {
  const m = /^(\d+)\.(\d+)/.exec(os.release());
  return m !== null && (Number(m[1]) > 5 || (Number(m[1]) === 5 && Number(m[2]) >= 14));
})();
/** How long a check of the host's /etc sources and top-level layout is reused (base-etc.ts). */
const BASE_RECHECK_MS = 250;
/** CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN: what `unshare --net --setgid --setuid` needs as root. */
const ROOT_NET_CAPS = (1n << 6n) | (1n << 7n) | (1n << 21n);

/** A command that passed every check, with its effective wall clock. */
interface CheckedCommand {
  readonly command: ExecutionCommand;
  readonly cwd: string;
  readonly wallSeconds: number;
}

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
  /** The compiled seccomp filter (null until `selfCheck`, or when disabled). */
  private seccompFile: string | null = null;
  private readonly cgroups: SandboxCgroups | null;
  /** Whether each workspace is a size-limited tmpfs (else the quota is a probe). */
  private readonly quota: boolean;

  constructor(private readonly opts: NamespaceOptions) {
    this.bwrap = opts.bwrapPath ?? '/usr/bin/bwrap';
    this.prlimit = opts.prlimitPath ?? '/usr/bin/prlimit';
    this.unshare = opts.unsharePath ?? '/usr/bin/unshare';
    this.asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    this.rootNet = this.asRoot && (effectiveCaps() & ROOT_NET_CAPS) === ROOT_NET_CAPS;
    this.controls = this.rootNet && opts.processControls !== false ? loadLinuxProcessControls() : null;
    const cg = opts.cgroups === false ? null : SandboxCgroups.detect();
    this.cgroups = cg && cg.mode !== 'none' ? cg : null;
    this.cgroupDetail = cg?.detail ?? 'disabled by the operator';
    this.quota = opts.workspaceQuota !== false && canMountQuota(effectiveCaps());
  }

  private seccompReady: Promise<void> | null = null;

  /** Compiles the seccomp filter once (seccomp.ts); a failure is the command's (and selfCheck's) error. */
  private ensureSeccomp(): Promise<void> {
    if (this.opts.seccomp === false) return Promise.resolve();
    this.seccompReady ??= (async () => {
      this.seccompFile = await compileSeccompFilter(await this.workspaceRoot());
    })();
    return this.seccompReady;
  }

  /** Why limits are (not) cgroups and the quota (not) a tmpfs: the service logs it at startup. */
  readonly cgroupDetail: string;

  /** The limits' mechanisms, for the startup log (a fallback is a warning). */
  limitsReport(): { cgroups: string; quota: string; seccomp: string; warnings: string[] } {
    const warnings: string[] = [];
    if (!this.cgroups)
      warnings.push(`memory, pids and CPU fall back to rlimits (RLIMIT_AS, RLIMIT_NPROC): ${this.cgroupDetail}`);
    if (!this.quota)
      warnings.push('the workspace quota is a polling probe: mounting a tmpfs needs root with CAP_SYS_ADMIN');
    if (!this.seccompFile && this.opts.seccomp !== false) warnings.push('no seccomp filter is loaded');
    return {
      cgroups: this.cgroups ? this.cgroupDetail : 'none',
      quota: this.quota ? 'tmpfs' : 'probe',
      seccomp: this.seccompFile ? 'bpf' : 'none',
      warnings,
    };
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
    await this.ensureSeccomp();
    const env = await this.provision({
      tenantId: 'self-check',
      runId: 'self-check',
      leaseSeconds: 30,
      limits: PROBE_LIMITS,
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
      const owner = this.asRoot ? { uid: hostUid, gid: hostGid } : null;
      if (this.quota && owner)
        await mountWorkspace(dir, { bytes: spec.limits.workspaceBytes, files: spec.limits.workspaceFiles }, owner);
      seeded = await createWorkspace(dir, spec.files ?? [], owner, this.quota);
    } catch (e) {
      net?.close();
      if (slot !== null) this.usedSlots.delete(slot);
      await unmountWorkspace(dir);
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
        signature: topLevelSignature,
      },
      BASE_RECHECK_MS,
    );
    return this.baseCopy;
  }

  private async prepareBase(dir: string): Promise<BaseRoot> {
    const roBinds = await mirrorTopLevel(dir);
    await makeMountpoints(dir);
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
    const req = await this.checkCommand(env, command);
    await this.ensureSeccomp();
    const limits = env.spec.limits;
    const nproc = limits.maxProcesses + 2 + (await this.processesOf(env.hostUid));
    const before = env.running.size === 0 && env.lastSnapshot ? env.lastSnapshot : await snapshot(env.dir);
    env.lastSnapshot = null; // until this command's own "after" (a failed command leaves none)
    const base = await (await this.baseRoot()).acquire();
    const fds: number[] = [];
    let cgroup: CommandCgroup | null = null;
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    try {
      // Synchronous: one open(2) of a local directory, cheaper than a thread-pool round trip.
      fds.push(fs.openSync(env.dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW));
      // bubblewrap reads the filter to its end: each command gets its own descriptor (own offset).
      if (this.seccompFile) fds.push(fs.openSync(this.seccompFile, fs.constants.O_RDONLY));
      cgroup =
        this.cgroups?.create(randomUUID(), {
          memoryBytes: limits.memoryBytes,
          maxProcesses: nproc,
          cpus: 1,
        }) ?? null;
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.signal?.aborted) controller.abort();
      env.running.add(controller);
      env.started++;
      const raw = await runLauncher(this.launchSpec(env, req, base, fds, cgroup, nproc), {
        signal: controller.signal,
        onOutput: opts.onOutput,
      });
      return await this.finish(env, raw, cgroup, before, command.collectChangedUpToBytes ?? 0);
    } finally {
      env.running.delete(controller);
      opts.signal?.removeEventListener('abort', onAbort);
      for (const fd of fds) fs.closeSync(fd);
      base.release();
      await cgroup?.remove();
      // A command that outlived its environment's destroy releases the network namespace last.
      if (env.destroyed && env.running.size === 0) env.net?.close();
    }
  }

  /** Every refusal of a command, before anything is prepared for it. */
  private async checkCommand(env: LiveEnv, command: ExecutionCommand): Promise<CheckedCommand> {
    const argv = checkArgv(command.argv);
    if (!argv.ok) throw new ExecutionRequestError(argv.code, argv.message);
    const cwd = normalizeRelativeDir(command.cwd);
    if (!cwd.ok) throw new ExecutionRequestError(cwd.code, cwd.message);
    const extraEnv = checkEnv(command.env, this.opts.envAllowlist);
    if (!extraEnv.ok) throw new ExecutionRequestError(extraEnv.code, extraEnv.message);
    await checkBridgeSocket(command.bridge, this.opts.bridgeDir ?? null);
    const limits = env.spec.limits;
    if (cwd.path !== '.') {
      const st = await fs.promises.lstat(path.join(env.dir, cwd.path)).catch(() => null);
      if (!st || !st.isDirectory())
        throw new ExecutionRequestError(
          'working_directory_not_found',
          `${cwd.path} is not a directory in the workspace`,
        );
    }
    return {
      command,
      cwd: cwd.path,
      wallSeconds: Math.max(0.1, Math.min(limits.wallClockSeconds, command.timeoutSeconds ?? limits.wallClockSeconds)),
    };
  }

  /** The launcher process and the service's enforcement around it. */
  private launchSpec(
    env: LiveEnv,
    req: CheckedCommand,
    base: EtcVersion<BaseRoot>,
    fds: readonly number[],
    cgroup: CommandCgroup | null,
    nproc: number,
  ): RunSpec {
    const limits = env.spec.limits;
    const net = env.net;
    const controls = this.controls;
    const seccompFd = this.seccompFile ? 4 : null;
    // With a cgroup: bubblewrap reports its child's pid on fd 5 and waits on fd 6 until the
    // service has moved that child into the group, so nothing of the sandbox runs outside it.
    const gate = cgroup ? { infoFd: 3 + fds.length, blockFd: 4 + fds.length } : null;
    const args = [
      ...this.launcherArgs(env),
      ...bwrapArgs({
        base,
        limits,
        cwd: req.cwd,
        vars: this.commandVars(env, req.command),
        seccompFd,
        gate,
        bridge: req.command.bridge ?? null,
      }),
      '--',
      this.prlimit,
      `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
      // The memory cgroup bounds what is used; without one, the address space is the only bound.
      ...(cgroup ? [] : [`--as=${limits.memoryBytes}`]),
      `--nproc=${nproc}`,
      `--fsize=${this.quota ? limits.maxFileBytes : Math.min(limits.maxFileBytes, limits.workspaceBytes)}`,
      `--nofile=${limits.maxOpenFiles}`,
      '--core=0',
      '--',
      ...req.command.argv,
    ];
    return {
      file: net ? this.bwrap : this.unshare,
      args,
      env: {},
      extraFds: [...fds, ...(gate ? (['pipe', 'pipe'] as const) : [])],
      // bubblewrap forked directly runs as the environment's uid; so does the launcher as root
      // without the capabilities `unshare` needs.
      ...(net || (this.asRoot && !this.rootNet) ? { uid: env.hostUid, gid: env.hostGid } : {}),
      ...(net && controls
        ? { spawnWith: (spawnLauncher: () => ChildProcess) => controls.inNetworkNamespace(net.fd, spawnLauncher) }
        : {}),
      ...(cgroup && gate ? { onSpawn: admitToCgroup(cgroup, gate) } : {}),
      wallClockMs: req.wallSeconds * 1000,
      maxOutputBytes: limits.maxOutputBytes,
      ...(this.quota ? {} : { probeEveryMs: 200, probe: () => quotaProbe(env.dir, limits) }),
    };
  }

  /**
   * The launcher before bubblewrap, when the service does not fork it itself: a fresh network
   * namespace, whose loopback is down, that the sandbox's user namespace does not own — as root,
   * one of the host's user namespace, then the environment's uid and gid (and no supplementary
   * group); otherwise one owned by a fresh user namespace mapping only the launching uid. bubblewrap
   * then makes every other namespace and must not make a network namespace of its own (it would
   * bring `lo` up).
   */
  private launcherArgs(env: LiveEnv): string[] {
    if (env.net) return [];
    return [
      ...(this.rootNet
        ? ['--net', '--setgid', String(env.hostGid), '--setuid', String(env.hostUid)]
        : ['--map-current-user', '--net']),
      '--',
      this.bwrap,
    ];
  }

  private commandVars(env: LiveEnv, command: ExecutionCommand): Record<string, string> {
    return {
      PATH: BASE_PATH,
      HOME: '/workspace',
      TMPDIR: '/tmp',
      LANG: 'C.UTF-8',
      USER: 'sandbox',
      ...(env.spec.env ?? {}),
      ...(command.env ?? {}),
      ...(command.bridge ? { AGENT_BRIDGE_SOCKET: BRIDGE_MOUNT, AGENT_BRIDGE_TOKEN: command.bridge.token } : {}),
    };
  }

  /** Classifies the outcome (the cgroup's word first) and reports the changed files and the limits. */
  private async finish(
    env: LiveEnv,
    raw: RawOutcome,
    cgroup: CommandCgroup | null,
    before: Map<string, FileStamp>,
    collectUpTo: number,
  ): Promise<ExecutionResult> {
    if (raw.serviceReason === null && raw.exitCode === 1 && /^(bwrap|unshare):/.test(raw.stderr.toString()))
      throw new Error(`the sandbox could not start: ${raw.stderr.toString().trim().slice(0, 500)}`);
    const limits = env.spec.limits;
    const c = refineWithCgroup(classify(raw, true), cgroup, limits, this.cgroups?.mode ?? 'none');
    // Kept for the next command only if this one was alone for the whole walk (no other command's
    // processes could have written while it read).
    const alone = env.running.size === 1;
    const startedBefore = env.started;
    const after = await snapshot(env.dir);
    env.lastSnapshot = alone && env.running.size === 1 && env.started === startedBefore ? after : null;
    return {
      ...executionResult(raw, c, await changedFiles(env.dir, before, after, collectUpTo)),
      limits: this.enforced(limits, cgroup !== null),
    };
  }

  private enforced(limits: ResourceLimits, cgroup: boolean): EnforcedLimits {
    const cg = cgroup ? (this.cgroups?.mode === 'v2' ? 'cgroup_v2' : 'cgroup_v1') : 'rlimit';
    return enforcedLimits(limits, {
      memory: cg,
      processes: cg,
      cpus: cgroup ? cg : null,
      workspace: this.quota ? 'tmpfs' : 'probe',
      fileBytes: this.quota ? limits.maxFileBytes : Math.min(limits.maxFileBytes, limits.workspaceBytes),
      seccomp: this.seccompFile ? 'bpf' : 'none',
    });
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
    await unmountWorkspace(env.dir);
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
    await this.cgroups?.removeOrphans();
    for (const name of await fs.promises.readdir(root).catch(() => [] as string[])) {
      if (!/^[0-9a-f-]{36}$/.test(name) || this.envs.has(name)) continue;
      await unmountWorkspace(path.join(root, name));
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
