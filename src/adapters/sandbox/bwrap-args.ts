import * as path from 'node:path';
import type { ResourceLimits } from '../../ports/execution-environment';
import type { EtcVersion } from './base-etc';
import { BRIDGE_MOUNT, DEVICES, SANDBOX_GID, SANDBOX_UID } from './sandbox-base';

/** What a prepared base root holds (namespace-environment.ts `prepareBase`). */
export interface BaseRoot {
  /** Top-level host directories (not links) bound read-only over their empty mountpoints, e.g. /lib. */
  readonly roBinds: readonly string[];
  /** Whether `dev/` holds copies of the device nodes (else empty files the host's devices are bound on). */
  readonly deviceNodes: boolean;
}

export interface BwrapCommand {
  readonly base: EtcVersion<BaseRoot>;
  readonly limits: ResourceLimits;
  readonly cwd: string;
  readonly vars: Readonly<Record<string, string>>;
  /** The compiled seccomp filter's descriptor in the launcher, or null for none. */
  readonly seccompFd: number | null;
  /** bubblewrap reports its child's pid on `infoFd` and waits on `blockFd` (cgroup admission). */
  readonly gate: { readonly infoFd: number; readonly blockFd: number } | null;
  readonly bridge: { readonly socketPath: string } | null;
}

/**
 * bubblewrap's arguments for one command (ADR 0018, docs/sandbox.md): every namespace but the
 * network one (the service provides that), no capability, the read-only base at `/`, read-only
 * `/usr`, a fresh `/proc`, the six devices, the workspace (descriptor 3) and two size-capped tmpfs as
 * the only writable places, the bridge socket when there is one, a clean environment; the filter
 * and the cgroup gate when asked.
 */
export function bwrapArgs(c: BwrapCommand): string[] {
  const layout = c.base.layout!;
  return [
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
    ...(c.gate ? ['--info-fd', String(c.gate.infoFd), '--block-fd', String(c.gate.blockFd)] : []),
    ...(c.seccompFd !== null ? ['--seccomp', String(c.seccompFd)] : []),
    // The root: the prepared base, read-only (it hides the tmpfs bubblewrap builds the root on).
    '--ro-bind',
    c.base.dir,
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
      ? ['--dev-bind', path.join(c.base.dir, 'dev'), '/dev']
      : DEVICES.flatMap(([name]) => ['--dev-bind', `/dev/${name}`, `/dev/${name}`])),
    '--size',
    String(c.limits.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--bind-fd',
    '3',
    '/workspace',
    // Nothing else is writable: /dev/shm is its own size-capped tmpfs.
    '--size',
    String(c.limits.tmpBytes),
    '--tmpfs',
    '/dev/shm',
    // The bridge: one socket, bound onto its empty mountpoint in the read-only root.
    ...(c.bridge ? ['--bind', c.bridge.socketPath, BRIDGE_MOUNT] : []),
    '--chdir',
    c.cwd === '.' ? '/workspace' : `/workspace/${c.cwd}`,
    '--clearenv',
    ...Object.entries(c.vars).flatMap(([k, v]) => ['--setenv', k, v]),
  ];
}
