import { createHash } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConfigurationError } from '../domain/errors';
import { DEFAULT_ENV_ALLOWLIST, looksLikeCredentialName } from '../domain/sandbox/request-checks';
import type { ResourceLimits } from '../domain/sandbox/limits';

/** Sandbox settings (ADR 0018, docs/sandbox.md); every knob is listed in .env.example. */
export type SandboxAdapterName = 'namespace' | 'gvisor' | 'container' | 'fake' | 'none';
const ADAPTERS: readonly SandboxAdapterName[] = ['namespace', 'gvisor', 'container', 'fake', 'none'];

export interface SandboxSettings {
  readonly adapter: SandboxAdapterName;
  /** Unix socket of the execution service (`agent sandboxd`). */
  readonly socketPath: string;
  /** Per-environment workspaces (`$AGENT_DATA_DIR/sandboxes`). */
  readonly root: string;
  /** The operator's ceiling on any command's wall clock, seconds. */
  readonly timeoutCeilingSeconds: number;
  /** Operator ceilings for every environment (the wall clock is set per command). */
  readonly limits: ResourceLimits;
  readonly envAllowlist: readonly string[];
  readonly containerEngine: 'docker' | 'podman';
  readonly containerImage: string;
  /** e.g. `runsc` (gVisor): passed as `--runtime`; makes the container adapter kernel-isolating. */
  readonly containerRuntime: string | null;
  /** SANDBOX_ALLOW_SHARED_KERNEL=1: accept a shared-kernel adapter even in AUTH_MODE=token. */
  readonly allowSharedKernel: boolean;
  /** When no service listens, a CLI/eval process starts its own `agent sandboxd` (default on). */
  readonly autostart: boolean;
  readonly hostUidBase: number;
  /** The gvisor adapter's runsc binary (SANDBOX_RUNSC_PATH, default /usr/bin/runsc). */
  readonly runscPath: string;
  /** gVisor platform (SANDBOX_GVISOR_PLATFORM: ptrace, kvm); null = runsc's default. */
  readonly gvisorPlatform: string | null;
  /** Where the worker makes tool-bridge sockets (plan §8.5; SANDBOX_BRIDGE_DIR). */
  readonly bridgeDir: string;
  /** The namespace adapter's programs (SANDBOX_BWRAP, SANDBOX_UNSHARE, SANDBOX_PRLIMIT; Debian paths by default). */
  readonly programs: { readonly bwrap: string; readonly unshare: string; readonly prlimit: string };
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new ConfigurationError(`${name} must be an integer >= ${min}, got "${raw}"`, { name });
  return n;
}

/** A socket path short enough for sun_path (108 bytes); long data dirs fall back to the temp dir. */
export function defaultSocketPath(dataDir: string): string {
  const p = path.join(dataDir, 'run', 'sandboxd.sock');
  if (Buffer.byteLength(p) <= 100) return p;
  const h = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  return path.join(os.tmpdir(), `agent-sandboxd-${h}`, 'sandboxd.sock');
}

function adapterOf(env: NodeJS.ProcessEnv): SandboxAdapterName {
  const raw = (env.SANDBOX_ADAPTER ?? '').trim();
  const adapter = (raw === '' ? (process.platform === 'linux' ? 'namespace' : 'container') : raw) as SandboxAdapterName;
  if (!ADAPTERS.includes(adapter))
    throw new ConfigurationError(`SANDBOX_ADAPTER must be namespace, gvisor, container, fake or none, got "${raw}"`, {
      name: 'SANDBOX_ADAPTER',
    });
  return adapter;
}

function envAllowlistOf(env: NodeJS.ProcessEnv): string[] {
  const extra = (env.SANDBOX_ENV_ALLOWLIST ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of extra)
    if (!/^[A-Z_][A-Z0-9_]{0,63}$/.test(name) || looksLikeCredentialName(name))
      throw new ConfigurationError(
        `SANDBOX_ENV_ALLOWLIST: ${name} is not allowed (invalid name or looks like a credential; credentials never enter a sandbox)`,
        { name: 'SANDBOX_ENV_ALLOWLIST' },
      );
  return [...new Set([...DEFAULT_ENV_ALLOWLIST, ...extra])];
}

function engineOf(env: NodeJS.ProcessEnv): 'docker' | 'podman' {
  const engine = (env.SANDBOX_CONTAINER_ENGINE ?? 'docker').trim();
  if (engine !== 'docker' && engine !== 'podman')
    throw new ConfigurationError(`SANDBOX_CONTAINER_ENGINE must be docker or podman, got "${engine}"`, {
      name: 'SANDBOX_CONTAINER_ENGINE',
    });
  return engine;
}

function limitsOf(env: NodeJS.ProcessEnv, wallClockSeconds: number): ResourceLimits {
  const mb = 1024 * 1024;
  return {
    wallClockSeconds,
    cpuSeconds: int(env, 'SANDBOX_CPU_SECONDS', 60),
    memoryBytes: int(env, 'SANDBOX_MEMORY_MB', 512) * mb,
    maxProcesses: int(env, 'SANDBOX_MAX_PROCESSES', 64),
    maxFileBytes: int(env, 'SANDBOX_MAX_FILE_MB', 64) * mb,
    workspaceBytes: int(env, 'SANDBOX_WORKSPACE_MB', 256) * mb,
    workspaceFiles: int(env, 'SANDBOX_WORKSPACE_FILES', 10_000),
    tmpBytes: int(env, 'SANDBOX_TMP_MB', 64) * mb,
    maxOpenFiles: int(env, 'SANDBOX_MAX_OPEN_FILES', 256, 16),
    maxOutputBytes: int(env, 'SANDBOX_MAX_OUTPUT_BYTES', mb, 1024),
  };
}

const flag = (v: string | undefined) => v === '1' || v === 'true';
const trimmed = (v: string | undefined) => v?.trim() || null;

export function loadSandboxSettings(env: NodeJS.ProcessEnv, dataDir: string): SandboxSettings {
  const timeoutCeilingSeconds = int(env, 'SANDBOX_TIMEOUT_CEILING_SECONDS', 120);
  const socketPath = trimmed(env.SANDBOX_SOCKET)
    ? path.resolve(env.SANDBOX_SOCKET!.trim())
    : defaultSocketPath(dataDir);
  return {
    adapter: adapterOf(env),
    socketPath,
    root: trimmed(env.SANDBOX_ROOT) ? path.resolve(env.SANDBOX_ROOT!.trim()) : path.join(dataDir, 'sandboxes'),
    timeoutCeilingSeconds,
    limits: limitsOf(env, timeoutCeilingSeconds),
    envAllowlist: envAllowlistOf(env),
    containerEngine: engineOf(env),
    containerImage: trimmed(env.SANDBOX_CONTAINER_IMAGE) ?? 'debian:bookworm-slim',
    containerRuntime: trimmed(env.SANDBOX_CONTAINER_RUNTIME),
    allowSharedKernel: flag(env.SANDBOX_ALLOW_SHARED_KERNEL),
    autostart: env.SANDBOX_AUTOSTART !== '0' && env.SANDBOX_AUTOSTART !== 'false',
    hostUidBase: int(env, 'SANDBOX_HOST_UID_BASE', 200_000, 1000),
    runscPath: trimmed(env.SANDBOX_RUNSC_PATH) ?? '/usr/bin/runsc',
    gvisorPlatform: trimmed(env.SANDBOX_GVISOR_PLATFORM),
    // Not beside the 0700 socket directory: the sandbox's unprivileged uid must traverse to its socket
    // (0711, unlistable; each socket's name is 128 random bits).
    bridgeDir: trimmed(env.SANDBOX_BRIDGE_DIR)
      ? path.resolve(env.SANDBOX_BRIDGE_DIR!.trim())
      : path.join(os.tmpdir(), `agent-bridge-${createHash('sha256').update(socketPath).digest('hex').slice(0, 12)}`),
    programs: {
      bwrap: env.SANDBOX_BWRAP?.trim() || '/usr/bin/bwrap',
      unshare: env.SANDBOX_UNSHARE?.trim() || '/usr/bin/unshare',
      prlimit: env.SANDBOX_PRLIMIT?.trim() || '/usr/bin/prlimit',
    },
  };
}

/** Whether the configured adapter isolates by kernel (gVisor/microVM) rather than sharing the host's. */
export function isKernelIsolating(s: SandboxSettings): boolean {
  if (s.adapter === 'gvisor') return true;
  return s.adapter === 'container' && s.containerRuntime !== null && /runsc|kata|firecracker/i.test(s.containerRuntime);
}

/**
 * Plan §28.6: in `AUTH_MODE=token` untrusted code never runs on a shared-kernel adapter (namespace,
 * plain docker/podman) or the fake, unless the operator sets SANDBOX_ALLOW_SHARED_KERNEL=1.
 * Returns the refusal message, or null when the sandbox may start.
 */
export function sharedKernelRefusal(s: SandboxSettings, authMode: string): string | null {
  if (s.adapter === 'none' || authMode !== 'token' || s.allowSharedKernel || isKernelIsolating(s)) return null;
  const what =
    s.adapter === 'container' ? `the container adapter without a kernel-isolating runtime` : `the ${s.adapter} adapter`;
  return (
    `sandbox refused: AUTH_MODE=token will not run untrusted code on ${what} (shared host kernel). ` +
    `Use SANDBOX_ADAPTER=gvisor (Debian's runsc: apt-get install -y runsc), or set ` +
    `SANDBOX_ALLOW_SHARED_KERNEL=1 to accept the shared-kernel boundary explicitly.`
  );
}
