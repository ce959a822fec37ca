import type { ResourceLimits } from '../domain/sandbox/limits';

export type { ResourceLimits };

/**
 * Where model-generated code runs (plan §7 ExecutionEnvironment, §18, §28; ADR 0018). Never in the
 * API or worker process: the worker holds a client of this port that talks to the execution
 * service (`agent sandboxd`) over a local socket; the service holds an adapter (namespace,
 * container, fake) that owns sandbox lifecycle. Three methods only: a tool that needs a file's
 * content gets it from `ExecutionResult.filesChanged`, never from a `readFile` beside `execute`.
 */
export interface ExecutionEnvironment {
  /** Creates a fresh, empty (or seeded) workspace and reserves it under a lease. */
  provision(spec: EnvironmentSpec): Promise<EnvironmentHandle>;
  /** Runs one command to completion (or until a limit stops it) inside the environment. */
  execute(env: EnvironmentHandle, command: ExecutionCommand, opts?: ExecuteOptions): Promise<ExecutionResult>;
  /** Kills anything still running in the environment and wipes its workspace. Idempotent. */
  destroy(env: EnvironmentHandle): Promise<void>;
}

/**
 * Why a command ended, so a caller can tell a program that failed (`exited` with a non-zero code)
 * from a limit that stopped it. Closed: adding a value is a versioned change (ADR 0018).
 */
export type KillReason = 'exited' | 'timeout' | 'memory' | 'cpu' | 'pids' | 'disk' | 'output' | 'cancelled';
export const KILL_REASONS: readonly KillReason[] = [
  'exited',
  'timeout',
  'memory',
  'cpu',
  'pids',
  'disk',
  'output',
  'cancelled',
];

/** A file placed in the workspace before the first command (relative path, content). */
export interface SeedFile {
  readonly path: string;
  readonly contentBase64: string;
}

export interface EnvironmentSpec {
  readonly tenantId: string;
  readonly runId: string;
  /** Seconds the environment may live without being destroyed; the service's reaper destroys it after. */
  readonly leaseSeconds: number;
  readonly limits: ResourceLimits;
  /**
   * Variables visible to every command. Only names on the service's allowlist are accepted and
   * anything that looks like a credential is refused (fail closed); see `env-policy.ts`.
   */
  readonly env?: Readonly<Record<string, string>>;
  readonly files?: readonly SeedFile[];
}

export interface EnvironmentHandle {
  /** Opaque id; never a host path. */
  readonly id: string;
  readonly adapter: string;
  /** ISO-8601 time after which the reaper destroys the environment. */
  readonly leaseExpiresAt: string;
}

export interface ExecutionCommand {
  /** Argument vector; `argv[0]` is looked up on the sandbox PATH. Never a shell string. */
  readonly argv: readonly string[];
  /** Working directory relative to the workspace root (`.` by default). */
  readonly cwd?: string;
  /** Per-command wall clock; the service uses the smaller of this and the environment's limit. */
  readonly timeoutSeconds?: number;
  /** Extra variables for this command (same allowlist as `EnvironmentSpec.env`). */
  readonly env?: Readonly<Record<string, string>>;
  /** Return the content (base64) of changed files whose total size is at most this many bytes. */
  readonly collectChangedUpToBytes?: number;
  /**
   * The in-sandbox tool bridge (plan §8.5, ports/tool-bridge.ts): a unix socket the worker listens
   * on, inside the service's bridge directory, bound into the sandbox at `/run/agent/bridge.sock`,
   * and the capability token the program presents (`AGENT_BRIDGE_SOCKET`, `AGENT_BRIDGE_TOKEN`).
   */
  readonly bridge?: { readonly socketPath: string; readonly token: string };
}

/** How a limit was enforced for one command (issue 28: every limit is reported on the result). */
export type LimitMechanism =
  'cgroup_v2' | 'cgroup_v1' | 'rlimit' | 'gvisor' | 'tmpfs' | 'probe' | 'service' | 'container_engine';

export interface EnforcedLimit {
  readonly value: number;
  readonly via: LimitMechanism;
}

export interface EnforcedLimits {
  readonly memoryBytes: EnforcedLimit;
  readonly maxProcesses: EnforcedLimit;
  readonly cpuSeconds: EnforcedLimit;
  /** CPU bandwidth, whole CPUs (cgroup cpu quota), when one was set. */
  readonly cpus: EnforcedLimit | null;
  readonly maxFileBytes: EnforcedLimit;
  readonly workspaceBytes: EnforcedLimit;
  readonly workspaceFiles: EnforcedLimit;
  readonly tmpBytes: EnforcedLimit;
  readonly maxOpenFiles: EnforcedLimit;
  readonly wallClockSeconds: EnforcedLimit;
  readonly maxOutputBytes: EnforcedLimit;
  /** `bpf`: libseccomp's filter loaded by bubblewrap; `gvisor`: the same list enforced by gVisor's kernel. */
  readonly seccomp: 'bpf' | 'gvisor' | 'none';
}

export interface ExecuteOptions {
  /** Aborting kills the command; the result's reason is `cancelled`. */
  readonly signal?: AbortSignal;
  /** Streamed output as it arrives (bench: time to first byte). */
  readonly onOutput?: (stream: 'stdout' | 'stderr', chunk: Uint8Array) => void;
}

export interface ChangedFile {
  readonly path: string;
  readonly sizeBytes: number;
  readonly sha256: string;
  /** Present when `collectChangedUpToBytes` allowed it. */
  readonly contentBase64?: string;
}

export interface ExecutionResult {
  /** The program's exit code; null when a signal or the service ended it. */
  readonly exitCode: number | null;
  /** The terminating signal's name (`SIGXCPU`, `SIGKILL`), when there was one. */
  readonly signal: string | null;
  readonly reason: KillReason;
  /** Human-readable detail of `reason` (e.g. which limit and its value). */
  readonly reasonDetail: string;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  /** True when the captured output was cut at `maxOutputBytes`. */
  readonly outputTruncated: boolean;
  readonly durationMs: number;
  /** Regular files created or modified by the command (symlinks and special files are never followed). */
  readonly filesChanged: readonly ChangedFile[];
  /** The limits the command ran under and what enforced each (absent from adapters that do not report them). */
  readonly limits?: EnforcedLimits;
}

/** Refusals before anything runs (bad argv, cwd outside the workspace, forbidden env, unknown env). */
export class ExecutionRequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ExecutionRequestError';
  }
}

/** The service could not be reached or failed (not the program's fault). */
export class ExecutionUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExecutionUnavailableError';
  }
}
