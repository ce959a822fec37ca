import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type {
  EnforcedLimits,
  EnvironmentHandle,
  EnvironmentSpec,
  ExecuteOptions,
  ExecutionCommand,
  ExecutionEnvironment,
  ExecutionResult,
  KillReason,
  ResourceLimits,
} from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import { checkArgv, checkEnv, normalizeRelativeDir } from '../../domain/sandbox/request-checks';
import { BaseEtc } from './base-etc';
import { SandboxCgroups, type CommandCgroup } from './cgroups';
import { checkBridgeSocket, enforcedLimits, quotaProbe, refineWithCgroup } from './limit-report';
import { GVISOR_GID, GVISOR_UID, ociConfig } from './oci-bundle';
import { classify, executionResult, runLauncher, type RawOutcome } from './process-runner';
import {
  BASE_PATH,
  BRIDGE_MOUNT,
  ETC_FILES,
  GROUP,
  makeMountpoints,
  mirrorTopLevel,
  PASSWD,
  topLevelSignature,
} from './sandbox-base';
import { canMountQuota, mountWorkspace, unmountWorkspace } from './workspace-quota';
import { changedFiles, createWorkspace, snapshot, wipe } from './workspace-fs';

/**
 * The `gvisor` adapter (issue 28): each command runs in its own gVisor sandbox, `runsc run` driven
 * directly with an OCI bundle (oci-bundle.ts) — no Docker engine. gVisor's Sentry is a kernel of its
 * own in user space: the program's syscalls never reach the host kernel, which is why token mode
 * accepts this adapter without `SANDBOX_ALLOW_SHARED_KERNEL`. No network (`--network=none`), the
 * bridge socket the only host socket it may connect to (`--host-uds=open`), the same seccomp list
 * as the namespace adapter enforced by gVisor's kernel (`--oci-seccomp`), rlimits enforced by
 * gVisor, and memory, pids and CPU bounded on the host by a cgroup the service makes and runsc joins
 * (cgroups.ts): the whole sandbox (Sentry, gofer and program) lives in it, so its memory limit
 * carries `GVISOR_OVERHEAD_BYTES` for gVisor itself, and an OOM kill takes the whole sandbox
 * (reported `memory`, `memory_limit`). Run as root, runsc puts the sandbox in a user namespace of
 * its own and drops privileges; as another user it runs `--rootless` (no cgroups then: rlimits only).
 */
export interface GvisorOptions {
  readonly root: string;
  readonly envAllowlist: readonly string[];
  readonly runscPath?: string;
  /** `ptrace` (default: works in any VM) or `kvm` (needs /dev/kvm; faster). */
  readonly platform?: string;
  readonly bridgeDir?: string | null;
  readonly cgroups?: boolean;
  readonly workspaceQuota?: boolean;
}

/** What gVisor itself (Sentry, gofer, page tables) needs beside the program inside the cgroup. */
export const GVISOR_OVERHEAD_BYTES = 96 * 1024 * 1024;
/** Host tasks of a sandbox beside the program's (Sentry's and the gofer's threads). */
const GVISOR_HOST_TASKS = 256;

interface LiveEnv {
  readonly handle: EnvironmentHandle;
  readonly spec: EnvironmentSpec;
  readonly dir: string;
  destroyed: boolean;
  readonly running: Set<AbortController>;
}

interface Layout {
  readonly roBinds: readonly string[];
}

export class GvisorExecutionEnvironment implements ExecutionEnvironment {
  readonly name = 'gvisor';
  private readonly envs = new Map<string, LiveEnv>();
  private readonly runsc: string;
  private readonly asRoot = process.getuid?.() === 0;
  private readonly cgroups: SandboxCgroups | null;
  private readonly quota: boolean;
  private baseCopy: BaseEtc<Layout> | null = null;

  constructor(private readonly opts: GvisorOptions) {
    this.runsc = opts.runscPath ?? '/usr/bin/runsc';
    const cg = opts.cgroups === false || !this.asRoot ? null : SandboxCgroups.detect();
    this.cgroups = cg && cg.mode !== 'none' ? cg : null;
    this.quota = opts.workspaceQuota !== false && canMountQuota(effectiveCaps());
  }

  private get stateDir(): string {
    return path.join(this.opts.root, '.runsc');
  }

  /** Throws with the fix when runsc is missing or cannot start a sandbox here. */
  async selfCheck(): Promise<void> {
    if (!fs.existsSync(this.runsc))
      throw new Error(
        `${this.runsc} is not installed; the gvisor sandbox needs Debian's runsc package (apt-get install -y runsc)`,
      );
    const env = await this.provision({
      tenantId: 'self-check',
      runId: 'self-check',
      leaseSeconds: 60,
      limits: {
        wallClockSeconds: 30,
        cpuSeconds: 5,
        memoryBytes: 256 * 1024 * 1024,
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
      const r = await this.execute(env, { argv: ['/bin/sh', '-c', ': >/dev/null'] });
      if (r.exitCode !== 0)
        throw new Error(
          `runsc could not start a sandbox (exit ${r.exitCode}): ${Buffer.from(r.stderr).toString('utf8').trim()}`,
        );
    } finally {
      await this.destroy(env);
    }
  }

  async provision(spec: EnvironmentSpec): Promise<EnvironmentHandle> {
    const env = checkEnv(spec.env, this.opts.envAllowlist);
    if (!env.ok) throw new ExecutionRequestError(env.code, env.message);
    await fs.promises.mkdir(this.opts.root, { recursive: true, mode: 0o711 });
    const id = randomUUID();
    const dir = path.join(this.opts.root, id);
    const owner = this.asRoot ? { uid: GVISOR_UID, gid: GVISOR_GID } : null;
    try {
      if (this.quota && owner)
        await mountWorkspace(dir, { bytes: spec.limits.workspaceBytes, files: spec.limits.workspaceFiles }, owner);
      await createWorkspace(dir, spec.files ?? [], owner, this.quota && owner !== null);
    } catch (e) {
      await unmountWorkspace(dir);
      await wipe(dir).catch(() => undefined);
      throw e;
    }
    const handle: EnvironmentHandle = {
      id,
      adapter: this.name,
      leaseExpiresAt: new Date(Date.now() + spec.leaseSeconds * 1000).toISOString(),
    };
    this.envs.set(id, { handle, spec, dir, destroyed: false, running: new Set() });
    return handle;
  }

  private baseRoot(): BaseEtc<Layout> {
    this.baseCopy ??= new BaseEtc<Layout>(
      this.opts.root,
      ETC_FILES,
      { passwd: PASSWD, group: GROUP },
      '/etc',
      {
        etcDir: 'etc',
        prepare: async (dir) => {
          const roBinds = await mirrorTopLevel(dir);
          await makeMountpoints(dir);
          return { roBinds };
        },
        signature: topLevelSignature,
      },
      250,
    );
    return this.baseCopy;
  }

  private async check(env: LiveEnv, command: ExecutionCommand): Promise<{ cwd: string; wallSeconds: number }> {
    for (const c of [checkArgv(command.argv), checkEnv(command.env, this.opts.envAllowlist)])
      if (!c.ok) throw new ExecutionRequestError(c.code, c.message);
    const cwd = normalizeRelativeDir(command.cwd);
    if (!cwd.ok) throw new ExecutionRequestError(cwd.code, cwd.message);
    await checkBridgeSocket(command.bridge, this.opts.bridgeDir ?? null);
    if (cwd.path !== '.') {
      const st = await fs.promises.lstat(path.join(env.dir, cwd.path)).catch(() => null);
      if (!st || !st.isDirectory())
        throw new ExecutionRequestError(
          'working_directory_not_found',
          `${cwd.path} is not a directory in the workspace`,
        );
    }
    const l = env.spec.limits;
    return {
      cwd: cwd.path,
      wallSeconds: Math.max(0.1, Math.min(l.wallClockSeconds, command.timeoutSeconds ?? l.wallClockSeconds)),
    };
  }

  async execute(
    handle: EnvironmentHandle,
    command: ExecutionCommand,
    opts: ExecuteOptions = {},
  ): Promise<ExecutionResult> {
    const env = this.envs.get(handle.id);
    if (!env || env.destroyed)
      throw new ExecutionRequestError('environment_not_found', `no live environment ${handle.id}`);
    const { cwd, wallSeconds } = await this.check(env, command);
    const l = env.spec.limits;
    const before = await snapshot(env.dir);
    const base = await this.baseRoot().acquire();
    const cid = randomUUID();
    const bundle = path.join(this.opts.root, '.bundles', cid);
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) controller.abort();
    env.running.add(controller);
    let cgroup: CommandCgroup | null = null;
    try {
      cgroup =
        this.cgroups?.create(cid, {
          memoryBytes: l.memoryBytes + GVISOR_OVERHEAD_BYTES,
          maxProcesses: l.maxProcesses + GVISOR_HOST_TASKS,
          cpus: 1,
        }) ?? null;
      await this.writeBundle(bundle, env, command, cwd, base.dir, base.layout!.roBinds, cgroup);
      const raw = await runLauncher(
        {
          file: this.runsc,
          args: this.runArgs(bundle, cid, cgroup !== null),
          env: { PATH: '/usr/bin:/bin' },
          wallClockMs: wallSeconds * 1000,
          maxOutputBytes: l.maxOutputBytes,
          onKill: () => void this.runscQuiet(['kill', cid, 'KILL']),
          probeEveryMs: 200,
          probe: () => this.probe(env, cgroup),
        },
        { signal: controller.signal, onOutput: opts.onOutput },
      );
      return await this.finish(env, raw, cgroup, before, command.collectChangedUpToBytes ?? 0);
    } finally {
      env.running.delete(controller);
      opts.signal?.removeEventListener('abort', onAbort);
      await this.runscQuiet(['delete', '--force', cid]);
      await cgroup?.remove();
      base.release();
      await fs.promises.rm(bundle, { recursive: true, force: true });
    }
  }

  /**
   * gVisor does not deliver SIGXCPU at RLIMIT_CPU, so the service enforces the CPU seconds from the
   * cgroup's CPU clock (the whole sandbox's: gVisor's own start-up is counted too, ~0.1 s), and
   * the workspace quota by probe where no tmpfs could be mounted.
   */
  private async probe(
    env: LiveEnv,
    cgroup: CommandCgroup | null,
  ): Promise<{ reason: KillReason; detail: string } | null> {
    const l = env.spec.limits;
    const used = cgroup?.cpuSeconds() ?? null;
    if (used !== null && used > l.cpuSeconds)
      return { reason: 'cpu', detail: `cpu_limit: the sandbox used more than ${l.cpuSeconds} CPU seconds (cgroup)` };
    return this.quota ? null : quotaProbe(env.dir, l);
  }

  private runArgs(bundle: string, cid: string, cgroup: boolean): string[] {
    return [
      '--root',
      this.stateDir,
      '--network=none',
      '--host-uds=open',
      '--oci-seccomp',
      ...(this.opts.platform ? [`--platform=${this.opts.platform}`] : []),
      ...(this.asRoot ? [] : ['--rootless']),
      ...(cgroup ? [] : ['--ignore-cgroups']),
      'run',
      '--bundle',
      bundle,
      cid,
    ];
  }

  private async writeBundle(
    bundle: string,
    env: LiveEnv,
    command: ExecutionCommand,
    cwd: string,
    rootfs: string,
    roBinds: readonly string[],
    cgroup: CommandCgroup | null,
  ): Promise<void> {
    const l = env.spec.limits;
    await fs.promises.mkdir(bundle, { recursive: true, mode: 0o700 });
    const config = ociConfig({
      rootfs,
      roBinds,
      workspace: env.dir,
      argv: command.argv,
      cwd,
      vars: {
        PATH: BASE_PATH,
        HOME: '/workspace',
        TMPDIR: '/tmp',
        LANG: 'C.UTF-8',
        USER: 'nobody',
        ...(env.spec.env ?? {}),
        ...(command.env ?? {}),
        ...(command.bridge ? { AGENT_BRIDGE_SOCKET: BRIDGE_MOUNT, AGENT_BRIDGE_TOKEN: command.bridge.token } : {}),
      },
      limits: l,
      fileBytes: this.quota ? l.maxFileBytes : Math.min(l.maxFileBytes, l.workspaceBytes),
      cgroupsPath: cgroup?.relativePath ?? null,
      bridgeSocket: command.bridge?.socketPath ?? null,
    });
    await fs.promises.writeFile(path.join(bundle, 'config.json'), JSON.stringify(config), { mode: 0o600 });
  }

  private async finish(
    env: LiveEnv,
    raw: RawOutcome,
    cgroup: CommandCgroup | null,
    before: Awaited<ReturnType<typeof snapshot>>,
    collectUpTo: number,
  ): Promise<ExecutionResult> {
    const l = env.spec.limits;
    let c = refineWithCgroup(classify(raw, true), cgroup, l, this.cgroups?.mode ?? 'none');
    // Without a cgroup's word, a sandbox killed with SIGKILL that the service did not kill was
    // taken by the host's OOM killer (gVisor itself never sends it).
    if (!cgroup && c.reason === 'exited' && c.signal === 'SIGKILL')
      c = { ...c, reason: 'memory', detail: 'memory_limit: the sandbox was killed (SIGKILL) under memory pressure' };
    // runsc's own failure (no sandbox ran): its messages start with what it was doing.
    if (
      raw.serviceReason === null &&
      raw.exitCode === 128 &&
      /^(running|creating|starting) container/m.test(raw.stderr.toString())
    )
      throw new Error(`the gVisor sandbox could not start: ${raw.stderr.toString().trim().slice(0, 500)}`);
    const after = await snapshot(env.dir);
    return {
      ...executionResult(raw, c, await changedFiles(env.dir, before, after, collectUpTo)),
      limits: this.enforced(l, cgroup !== null),
    };
  }

  private enforced(l: ResourceLimits, cgroup: boolean): EnforcedLimits {
    const cg = this.cgroups?.mode === 'v2' ? 'cgroup_v2' : 'cgroup_v1';
    const report = enforcedLimits(l, {
      memory: cgroup ? cg : 'gvisor',
      processes: 'gvisor',
      cpus: cgroup ? cg : null,
      workspace: this.quota ? 'tmpfs' : 'probe',
      fileBytes: this.quota ? l.maxFileBytes : Math.min(l.maxFileBytes, l.workspaceBytes),
      seccomp: 'gvisor',
      rlimit: 'gvisor',
    });
    return cgroup ? { ...report, cpuSeconds: { value: l.cpuSeconds, via: cg } } : report;
  }

  private runscQuiet(args: string[]): Promise<void> {
    return new Promise((resolve) =>
      execFile(
        this.runsc,
        ['--root', this.stateDir, ...args],
        { env: { PATH: '/usr/bin:/bin' }, timeout: 10_000 },
        () => resolve(),
      ),
    );
  }

  async destroy(handle: EnvironmentHandle): Promise<void> {
    const env = this.envs.get(handle.id);
    if (!env) return;
    env.destroyed = true;
    for (const c of env.running) c.abort();
    for (let i = 0; i < 250 && env.running.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    await unmountWorkspace(env.dir);
    await wipe(env.dir);
    this.envs.delete(handle.id);
  }

  expired(nowMs: number): EnvironmentHandle[] {
    return [...this.envs.values()].filter((e) => Date.parse(e.handle.leaseExpiresAt) <= nowMs).map((e) => e.handle);
  }

  /** Leftovers of a previous service process: sandboxes, bundles, cgroups, workspaces. */
  async removeOrphans(): Promise<number> {
    await fs.promises.mkdir(this.opts.root, { recursive: true, mode: 0o711 });
    let n = await this.baseRoot().removeOrphans();
    await this.cgroups?.removeOrphans();
    await fs.promises.rm(path.join(this.opts.root, '.bundles'), { recursive: true, force: true });
    for (const name of await fs.promises.readdir(this.opts.root).catch(() => [] as string[])) {
      if (!/^[0-9a-f-]{36}$/.test(name) || this.envs.has(name)) continue;
      await unmountWorkspace(path.join(this.opts.root, name));
      await wipe(path.join(this.opts.root, name)).catch(() => undefined);
      n++;
    }
    return n;
  }
}

function effectiveCaps(): bigint {
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? BigInt(`0x${m[1]}`) : 0n;
  } catch {
    return 0n;
  }
}
