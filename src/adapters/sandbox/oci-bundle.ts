import type { ResourceLimits } from '../../ports/execution-environment';
import { BRIDGE_MOUNT } from './sandbox-base';
import { ociSeccomp } from './seccomp';

/** The in-sandbox user of the gVisor adapter: `nobody`, no capability (gVisor's kernel checks it). */
export const GVISOR_UID = 65534;
export const GVISOR_GID = 65534;

export interface OciCommand {
  readonly rootfs: string;
  /** Real top-level host directories bound read-only (a merged-/usr host has none). */
  readonly roBinds: readonly string[];
  readonly workspace: string;
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly vars: Readonly<Record<string, string>>;
  readonly limits: ResourceLimits;
  readonly fileBytes: number;
  /** Relative to runsc's own cgroup; the service made it (cgroups.ts) and reads its OOM count. */
  readonly cgroupsPath: string | null;
  readonly bridgeSocket: string | null;
}

const bind = (source: string, destination: string, mode: 'ro' | 'rw') => ({
  destination,
  type: 'bind',
  source,
  options: ['rbind', mode, 'nosuid', 'nodev'],
});

/**
 * The OCI runtime spec (1.0.2) runsc runs one command from (issue 28): the prepared base read-only
 * at `/`, read-only `/usr`, a fresh `/proc`, a small `/dev` tmpfs gVisor fills with its own
 * devices, size-capped tmpfs at `/tmp` and `/dev/shm`, the workspace read-write and, when asked,
 * the bridge socket; fresh PID, IPC, UTS, mount and network namespaces (runsc `--network=none`
 * gives only a loopback inside gVisor's own network stack), no capability, no-new-privileges,
 * rlimits enforced by gVisor's kernel, and the seccomp list of seccomp.ts (`--oci-seccomp`).
 */
export function ociConfig(c: OciCommand): Record<string, unknown> {
  const l = c.limits;
  const rlimit = (type: string, soft: number, hard = soft) => ({ type, soft, hard });
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: GVISOR_UID, gid: GVISOR_GID, additionalGids: [] },
      args: [...c.argv],
      env: Object.entries(c.vars).map(([k, v]) => `${k}=${v}`),
      cwd: c.cwd === '.' ? '/workspace' : `/workspace/${c.cwd}`,
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
      rlimits: [
        rlimit('RLIMIT_CPU', l.cpuSeconds, l.cpuSeconds + 1),
        rlimit('RLIMIT_NPROC', l.maxProcesses),
        rlimit('RLIMIT_FSIZE', c.fileBytes),
        rlimit('RLIMIT_NOFILE', l.maxOpenFiles),
        rlimit('RLIMIT_CORE', 0),
      ],
      noNewPrivileges: true,
    },
    root: { path: c.rootfs, readonly: true },
    hostname: 'sandbox',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'noexec', 'mode=755', 'size=65536'] },
      { destination: '/usr', type: 'bind', source: '/usr', options: ['rbind', 'ro', 'nosuid', 'nodev'] },
      ...c.roBinds.map((p) => bind(p, p, 'ro')),
      {
        destination: '/tmp',
        type: 'tmpfs',
        source: 'tmpfs',
        options: ['nosuid', 'nodev', 'mode=1777', `size=${l.tmpBytes}`],
      },
      {
        destination: '/dev/shm',
        type: 'tmpfs',
        source: 'shm',
        options: ['nosuid', 'nodev', 'noexec', 'mode=1777', `size=${l.tmpBytes}`],
      },
      bind(c.workspace, '/workspace', 'rw'),
      ...(c.bridgeSocket ? [bind(c.bridgeSocket, BRIDGE_MOUNT, 'rw')] : []),
    ],
    linux: {
      namespaces: ['pid', 'ipc', 'uts', 'mount', 'network'].map((type) => ({ type })),
      ...(c.cgroupsPath ? { cgroupsPath: c.cgroupsPath } : {}),
      seccomp: ociSeccomp(),
      maskedPaths: ['/proc/kcore', '/proc/keys', '/proc/timer_list', '/sys/firmware'],
      readonlyPaths: ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus'],
    },
  };
}
