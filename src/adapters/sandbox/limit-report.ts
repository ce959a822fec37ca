import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import type { EnforcedLimits, KillReason, LimitMechanism, ResourceLimits } from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import { checkBridge } from '../../domain/sandbox/request-checks';
import type { CgroupMode, CommandCgroup } from './cgroups';
import type { classify } from './process-runner';
import { usage } from './workspace-fs';

type Classified = ReturnType<typeof classify>;

/**
 * The cgroup's word on how a command ended comes before the exit status's: a process the memory
 * controller's OOM killer took is `memory` (detail `memory_limit`, the name the model and the
 * operator see), whatever signal or exit code it left; a refused fork is `pids`.
 */
export function refineWithCgroup(
  c: Classified,
  cgroup: CommandCgroup | null,
  limits: ResourceLimits,
  mode: CgroupMode,
): Classified {
  if (!cgroup || c.reason === 'timeout' || c.reason === 'output' || c.reason === 'cancelled') return c;
  const seen = cgroup.outcome();
  if (seen.oomKilled)
    return {
      ...c,
      reason: 'memory',
      detail: `memory_limit: killed by the memory cgroup (${mode}, limit ${limits.memoryBytes} bytes)`,
    };
  if (seen.pidsRefused && c.reason === 'exited' && (c.exitCode !== 0 || c.signal !== null))
    return {
      ...c,
      reason: 'pids',
      detail: `pids_limit: a fork was refused at the pids cgroup's ${limits.maxProcesses}`,
    };
  return c;
}

/** The polling quota where no workspace tmpfs could be mounted. */
export async function quotaProbe(
  dir: string,
  limits: ResourceLimits,
): Promise<{ reason: KillReason; detail: string } | null> {
  const u = await usage(dir, { bytes: limits.workspaceBytes, files: limits.workspaceFiles });
  if (u.bytes > limits.workspaceBytes)
    return { reason: 'disk', detail: `workspace exceeded ${limits.workspaceBytes} bytes` };
  if (u.files > limits.workspaceFiles)
    return { reason: 'disk', detail: `workspace exceeded ${limits.workspaceFiles} files (inode quota)` };
  return null;
}

/**
 * bubblewrap's cgroup gate: it writes `{"child-pid": N}` on its info descriptor and blocks on its
 * block descriptor before it sets anything of the command up; the service moves N (the sandbox's
 * PID 1, which forks the command) into the group and only then releases it.
 */
export function admitToCgroup(
  cgroup: CommandCgroup,
  gate: { readonly infoFd: number; readonly blockFd: number },
): (child: ChildProcess, kill: (reason: KillReason, detail: string) => void) => void {
  return (child, kill) => {
    const info = child.stdio[gate.infoFd] as Readable;
    const block = child.stdio[gate.blockFd] as Writable;
    let text = '';
    let done = false;
    info.on('error', () => undefined);
    block.on('error', () => undefined);
    info.on('data', (chunk: Buffer) => {
      if (done) return;
      text += chunk.toString('utf8');
      const m = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (!m) return;
      done = true;
      try {
        cgroup.enter(Number(m[1]));
        block.end('1');
      } catch (e) {
        kill('cancelled', `the sandbox could not join its cgroup: ${(e as Error).message}`);
      }
    });
  };
}

/** The bridge socket must pass the request checks and be a socket the worker really made. */
export async function checkBridgeSocket(bridge: unknown, bridgeDir: string | null): Promise<void> {
  const b = checkBridge(bridge, bridgeDir);
  if (!b.ok) throw new ExecutionRequestError(b.code, b.message);
  if (bridge === undefined || bridge === null) return;
  const st = await fs.promises.lstat((bridge as { socketPath: string }).socketPath).catch(() => null);
  if (!st || !st.isSocket()) throw new ExecutionRequestError('bridge_refused', 'the bridge socket does not exist');
}

/** The report of what enforced each limit of one command. */
export function enforcedLimits(
  l: ResourceLimits,
  m: {
    memory: LimitMechanism;
    processes: LimitMechanism;
    cpus: LimitMechanism | null;
    workspace: LimitMechanism;
    fileBytes: number;
    seccomp: EnforcedLimits['seccomp'];
    tmp?: LimitMechanism;
    rlimit?: LimitMechanism;
  },
): EnforcedLimits {
  const r = m.rlimit ?? 'rlimit';
  return {
    memoryBytes: { value: l.memoryBytes, via: m.memory },
    maxProcesses: { value: l.maxProcesses, via: m.processes },
    cpuSeconds: { value: l.cpuSeconds, via: r },
    cpus: m.cpus ? { value: 1, via: m.cpus } : null,
    maxFileBytes: { value: m.fileBytes, via: r },
    workspaceBytes: { value: l.workspaceBytes, via: m.workspace },
    workspaceFiles: { value: l.workspaceFiles, via: m.workspace },
    tmpBytes: { value: l.tmpBytes, via: m.tmp ?? 'tmpfs' },
    maxOpenFiles: { value: l.maxOpenFiles, via: r },
    wallClockSeconds: { value: l.wallClockSeconds, via: 'service' },
    maxOutputBytes: { value: l.maxOutputBytes, via: 'service' },
    seccomp: m.seccomp,
  };
}
