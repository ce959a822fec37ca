import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
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
import { changedFiles, createWorkspace, snapshot, usage, wipe } from './workspace-fs';

/**
 * The `container` adapter (plan §28.2; the production choice with `runtime: runsc`): one
 * `docker|podman run --rm` per command with no network, a read-only root, a non-root user, every
 * capability dropped, no-new-privileges, pids/memory/cpu limits, a size-capped tmpfs at /tmp and
 * the environment's workspace as the only writable bind mount. The service runs the engine's CLI;
 * the worker never does, and the Docker socket is never mounted into anything.
 */
export interface ContainerOptions {
  readonly root: string;
  readonly engine: 'docker' | 'podman';
  readonly image: string;
  /** `runsc` (gVisor), `kata`, ...: passed as `--runtime`. */
  readonly runtime: string | null;
  readonly envAllowlist: readonly string[];
  /** Engine binary (default: the engine name on PATH). */
  readonly enginePath?: string;
}

interface LiveEnv {
  readonly handle: EnvironmentHandle;
  readonly spec: EnvironmentSpec;
  readonly dir: string;
  destroyed: boolean;
  readonly running: Set<AbortController>;
}

export class ContainerExecutionEnvironment implements ExecutionEnvironment {
  readonly name = 'container';
  private readonly envs = new Map<string, LiveEnv>();

  constructor(private readonly opts: ContainerOptions) {}

  private get bin(): string {
    return this.opts.enginePath ?? this.opts.engine;
  }

  /** Resolves when the engine answers `version`; rejects with the reason otherwise. */
  reachable(): Promise<void> {
    return new Promise((resolve, reject) =>
      execFile(this.bin, ['version', '--format', '{{.Server.Version}}'], { timeout: 10_000 }, (err, _o, stderr) =>
        err
          ? reject(new Error(`${this.opts.engine} is not reachable: ${String(stderr || err.message).trim()}`))
          : resolve(),
      ),
    );
  }

  /** The engine argv for one command (exported for the contract test and docs). */
  runArgs(name: string, env: LiveEnv, command: ExecutionCommand, cwd: string): string[] {
    const l = env.spec.limits;
    const uid = process.getuid?.() ?? 65534;
    const vars = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/workspace',
      TMPDIR: '/tmp',
      ...(env.spec.env ?? {}),
      ...(command.env ?? {}),
    };
    return [
      'run',
      '--rm',
      '--name',
      name,
      '--network',
      'none',
      '--read-only',
      '--user',
      `${uid === 0 ? 65534 : uid}:${uid === 0 ? 65534 : (process.getgid?.() ?? 65534)}`,
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
      '--pids-limit',
      String(l.maxProcesses),
      '--memory',
      String(l.memoryBytes),
      '--memory-swap',
      String(l.memoryBytes),
      '--cpus',
      '1',
      '--ulimit',
      `cpu=${l.cpuSeconds}:${l.cpuSeconds + 1}`,
      '--ulimit',
      `fsize=${Math.min(l.maxFileBytes, l.workspaceBytes)}`,
      '--ulimit',
      `nofile=${l.maxOpenFiles}:${l.maxOpenFiles}`,
      '--tmpfs',
      `/tmp:rw,noexec,nosuid,size=${l.tmpBytes}`,
      '--mount',
      `type=bind,source=${env.dir},target=/workspace`,
      '--workdir',
      cwd === '.' ? '/workspace' : `/workspace/${cwd}`,
      ...(this.opts.runtime ? ['--runtime', this.opts.runtime] : []),
      ...Object.entries(vars).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
      '--',
      this.opts.image,
      ...command.argv,
    ];
  }

  async provision(spec: EnvironmentSpec): Promise<EnvironmentHandle> {
    const env = checkEnv(spec.env, this.opts.envAllowlist);
    if (!env.ok) throw new ExecutionRequestError(env.code, env.message);
    await fs.promises.mkdir(this.opts.root, { recursive: true, mode: 0o711 });
    const id = randomUUID();
    const dir = path.join(this.opts.root, id);
    const root = process.getuid?.() === 0;
    await createWorkspace(dir, spec.files ?? [], root ? { uid: 65534, gid: 65534 } : null);
    const handle: EnvironmentHandle = {
      id,
      adapter: this.name,
      leaseExpiresAt: new Date(Date.now() + spec.leaseSeconds * 1000).toISOString(),
    };
    this.envs.set(id, { handle, spec, dir, destroyed: false, running: new Set() });
    return handle;
  }

  async execute(
    handle: EnvironmentHandle,
    command: ExecutionCommand,
    opts: ExecuteOptions = {},
  ): Promise<ExecutionResult> {
    const env = this.envs.get(handle.id);
    if (!env || env.destroyed)
      throw new ExecutionRequestError('environment_not_found', `no live environment ${handle.id}`);
    for (const c of [checkArgv(command.argv), checkEnv(command.env, this.opts.envAllowlist)])
      if (!c.ok) throw new ExecutionRequestError(c.code, c.message);
    const cwd = normalizeRelativeDir(command.cwd);
    if (!cwd.ok) throw new ExecutionRequestError(cwd.code, cwd.message);
    if (command.bridge)
      throw new ExecutionRequestError(
        'bridge_refused',
        'the container adapter offers no tool bridge (use namespace or gvisor)',
      );
    const l = env.spec.limits;
    const wallSeconds = Math.min(l.wallClockSeconds, command.timeoutSeconds ?? l.wallClockSeconds);
    const name = `agent-sbx-${randomUUID()}`;
    const before = await snapshot(env.dir);
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    env.running.add(controller);
    try {
      const raw = await runLauncher(
        {
          file: this.bin,
          args: this.runArgs(name, env, command, cwd.path),
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' },
          wallClockMs: wallSeconds * 1000,
          maxOutputBytes: l.maxOutputBytes,
          onKill: () => execFile(this.bin, ['kill', name], () => undefined),
          probe: async () => {
            const u = await usage(env.dir, { bytes: l.workspaceBytes, files: l.workspaceFiles });
            if (u.bytes > l.workspaceBytes)
              return { reason: 'disk', detail: `workspace exceeded ${l.workspaceBytes} bytes` };
            if (u.files > l.workspaceFiles)
              return { reason: 'disk', detail: `workspace exceeded ${l.workspaceFiles} files` };
            return null;
          },
        },
        { signal: controller.signal, onOutput: opts.onOutput },
      );
      // docker reports 137 for a SIGKILL (the memory cgroup's OOM killer when nothing else killed it).
      const c = classify(raw, true);
      const oom = c.reason === 'exited' && c.signal === 'SIGKILL';
      const after = await snapshot(env.dir);
      return executionResult(
        raw,
        oom ? { ...c, reason: 'memory', detail: 'killed by the memory cgroup (OOM)' } : c,
        await changedFiles(env.dir, before, after, command.collectChangedUpToBytes ?? 0),
      );
    } finally {
      env.running.delete(controller);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  async destroy(handle: EnvironmentHandle): Promise<void> {
    const env = this.envs.get(handle.id);
    if (!env) return;
    env.destroyed = true;
    for (const c of env.running) c.abort();
    for (let i = 0; i < 250 && env.running.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    await wipe(env.dir);
    this.envs.delete(handle.id);
  }

  expired(nowMs: number): EnvironmentHandle[] {
    return [...this.envs.values()].filter((e) => Date.parse(e.handle.leaseExpiresAt) <= nowMs).map((e) => e.handle);
  }

  /** Exposed for the contract test: the argv a command would run with. */
  argvFor(handle: EnvironmentHandle, command: ExecutionCommand): string[] {
    const env = this.envs.get(handle.id);
    if (!env) throw new ExecutionRequestError('environment_not_found', `no live environment ${handle.id}`);
    return this.runArgs(
      'agent-sbx-preview',
      env,
      command,
      normalizeRelativeDir(command.cwd).ok ? (normalizeRelativeDir(command.cwd) as { path: string }).path : '.',
    );
  }
}
