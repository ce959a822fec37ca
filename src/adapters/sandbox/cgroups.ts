import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Per-command cgroups for the sandbox adapters (issue 28, docs/sandbox.md "Limits"): memory, process
 * count and CPU bandwidth are enforced by the kernel's cgroup controllers where the host delegates
 * them to the service, so a memory hog is killed by the memory controller's OOM killer (instead of an
 * allocation refused by `RLIMIT_AS`, which breaks programs that reserve address space) and the
 * service can tell afterwards that it happened (`oom_kill` went up). cgroup v2 is preferred (one
 * unified hierarchy, `memory.events`); v1 is used where the host mounts the controllers there, as
 * many container hosts still do. Where neither can be written the adapters fall back to rlimits and
 * say so (`mode: 'none'` with the reason).
 *
 * Each command gets `<service's own cgroup>/agent-sandbox/<id>` in every controller it uses: a child
 * of the service's cgroup, so the sandbox never escapes a limit the host placed on the service.
 */
export type CgroupMode = 'v2' | 'v1' | 'none';

export interface CgroupLimits {
  readonly memoryBytes: number;
  readonly maxProcesses: number;
  /** CPU bandwidth in whole CPUs (cfs quota / period). */
  readonly cpus: number;
}

/** What the controllers observed while the command ran. */
export interface CgroupOutcome {
  /** The memory controller's OOM killer killed a process of the group. */
  readonly oomKilled: boolean;
  /** A fork or clone was refused at `pids.max`. */
  readonly pidsRefused: boolean;
}

export interface CommandCgroup {
  /** The cgroup path relative to the service's own (for runsc's `cgroupsPath`). */
  readonly relativePath: string;
  /** CPU seconds the group has used so far (null when no controller counts them). */
  cpuSeconds(): number | null;
  /** Moves a host pid (and the children it forks afterwards) into the group. */
  enter(pid: number): void;
  outcome(): CgroupOutcome;
  /** Kills what is left in the group and removes it. */
  remove(): Promise<void>;
}

interface Controllers {
  readonly memory: string;
  readonly pids: string;
  readonly cpu: string;
  /** CPU time used (v2: `cpu.stat`; v1: the cpuacct controller, when mounted). */
  readonly cpuacct: string | null;
}

const PARENT = 'agent-sandbox';

/** `/proc/self/cgroup`: controller (or '' for v2) → the process's path in that hierarchy. */
function ownPaths(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of fs.readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const c of m[1] === '' ? [''] : m[1].split(',')) out.set(c, m[2]);
  }
  return out;
}

/** Mount points of cgroup hierarchies: 'v2' → the cgroup2 mount, controller name → its v1 mount. */
function mounts(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!post) continue;
    const [fstype, , superOpts] = post.split(' ');
    const mountPoint = pre.split(' ')[4];
    if (fstype === 'cgroup2') out.set('v2', mountPoint);
    else if (fstype === 'cgroup') for (const o of superOpts.split(',')) if (!out.has(o)) out.set(o, mountPoint);
  }
  return out;
}

function tryMkdir(dir: string): boolean {
  try {
    fs.mkdirSync(dir, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

function v2Controllers(m: Map<string, string>, own: Map<string, string>): Controllers | null {
  const mount = m.get('v2');
  const p = own.get('');
  if (!mount || p === undefined) return null;
  // The no-internal-process rule: the group goes beside the service's own, under its parent.
  const base = path.join(mount, p === '/' ? '/' : path.dirname(p), PARENT);
  try {
    const available = fs.readFileSync(path.join(path.dirname(base), 'cgroup.controllers'), 'utf8').split(/\s+/);
    if (!['memory', 'pids', 'cpu'].every((c) => available.includes(c))) return null;
    if (!tryMkdir(base)) return null;
    fs.writeFileSync(path.join(base, 'cgroup.subtree_control'), '+memory +pids +cpu');
    return { memory: base, pids: base, cpu: base, cpuacct: base };
  } catch {
    return null;
  }
}

function v1Controllers(m: Map<string, string>, own: Map<string, string>): Controllers | null {
  const dirs: Record<string, string> = {};
  for (const c of ['memory', 'pids', 'cpu']) {
    const mount = m.get(c);
    const p = own.get(c);
    if (!mount || p === undefined) return null;
    const dir = path.join(mount, p, PARENT);
    if (!tryMkdir(dir) || !fs.existsSync(path.join(dir, 'cgroup.procs'))) return null;
    dirs[c] = dir;
  }
  let cpuacct: string | null = null;
  const acctMount = m.get('cpuacct');
  const acctPath = own.get('cpuacct');
  if (acctMount && acctPath !== undefined && tryMkdir(path.join(acctMount, acctPath, PARENT)))
    cpuacct = path.join(acctMount, acctPath, PARENT);
  return { memory: dirs.memory, pids: dirs.pids, cpu: dirs.cpu, cpuacct };
}

function write(file: string, value: string): void {
  fs.writeFileSync(file, value);
}

function readCounter(file: string, key: string): number {
  try {
    const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(fs.readFileSync(file, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

async function removeGroup(dir: string): Promise<void> {
  // A runtime's own group inside (runsc's `cgroupsPath`) goes first.
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) await removeGroup(path.join(dir, e.name));
  for (let i = 0; i < 50; i++) {
    try {
      for (const pid of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean))
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          /* gone */
        }
      fs.rmdirSync(dir);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

export class SandboxCgroups {
  private constructor(
    readonly mode: CgroupMode,
    /** Why cgroups are (not) used, for the startup log and the result's limit report. */
    readonly detail: string,
    private readonly controllers: Controllers | null,
  ) {}

  /** Detects which cgroup version the host delegates to this process (v2 first). */
  static detect(): SandboxCgroups {
    try {
      const m = mounts();
      const own = ownPaths();
      const v2 = v2Controllers(m, own);
      if (v2) return new SandboxCgroups('v2', `cgroup v2 at ${v2.memory}`, v2);
      const v1 = v1Controllers(m, own);
      if (v1) return new SandboxCgroups('v1', `cgroup v1 (memory, pids, cpu) under ${v1.memory}`, v1);
      return new SandboxCgroups(
        'none',
        'no writable cgroup (v2 with memory, pids and cpu, or v1 memory, pids and cpu) is delegated to the service',
        null,
      );
    } catch (e) {
      return new SandboxCgroups('none', `cgroups unreadable: ${(e as Error).message}`, null);
    }
  }

  /** A fresh group with the limits applied, or null without cgroups. */
  create(id: string, limits: CgroupLimits): CommandCgroup | null {
    const c = this.controllers;
    if (!c) return null;
    // The service's pid first: another service on the host (or a parallel test) sweeping orphans
    // leaves the groups of a live service alone.
    id = `${process.pid}.${id}`;
    const dirs = [...new Set([c.memory, c.pids, c.cpu, ...(c.cpuacct ? [c.cpuacct] : [])])].map((d) =>
      path.join(d, id),
    );
    for (const d of dirs) fs.mkdirSync(d);
    const [mem, pids, cpu] = [c.memory, c.pids, c.cpu].map((d) => path.join(d, id));
    const period = 100_000;
    if (this.mode === 'v2') {
      write(path.join(mem, 'memory.max'), String(limits.memoryBytes));
      try {
        write(path.join(mem, 'memory.swap.max'), '0');
      } catch {
        /* no swap accounting */
      }
      write(path.join(pids, 'pids.max'), String(limits.maxProcesses));
      write(path.join(cpu, 'cpu.max'), `${Math.round(limits.cpus * period)} ${period}`);
    } else {
      write(path.join(mem, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      try {
        write(path.join(mem, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
      } catch {
        /* no swap accounting */
      }
      write(path.join(pids, 'pids.max'), String(limits.maxProcesses));
      write(path.join(cpu, 'cpu.cfs_period_us'), String(period));
      write(path.join(cpu, 'cpu.cfs_quota_us'), String(Math.round(limits.cpus * period)));
    }
    const v2 = this.mode === 'v2';
    return {
      relativePath: path.join(PARENT, id),
      enter: (pid) => {
        for (const d of dirs) write(path.join(d, 'cgroup.procs'), String(pid));
      },
      cpuSeconds: () => {
        if (!c.cpuacct) return null;
        const acct = path.join(c.cpuacct, id);
        try {
          if (v2) return readCounter(path.join(acct, 'cpu.stat'), 'usage_usec') / 1e6;
          return Number(fs.readFileSync(path.join(acct, 'cpuacct.usage'), 'utf8')) / 1e9;
        } catch {
          return null;
        }
      },
      outcome: () => ({
        oomKilled: readCounter(path.join(mem, v2 ? 'memory.events' : 'memory.oom_control'), 'oom_kill') > 0,
        pidsRefused: readCounter(path.join(pids, 'pids.events'), 'max') > 0,
      }),
      remove: async () => {
        for (const d of dirs) await removeGroup(d);
      },
    };
  }

  /** Groups left by a service process that is gone (removed at startup). */
  async removeOrphans(): Promise<void> {
    const c = this.controllers;
    if (!c) return;
    for (const base of new Set([c.memory, c.pids, c.cpu, ...(c.cpuacct ? [c.cpuacct] : [])]))
      for (const e of fs.readdirSync(base, { withFileTypes: true }))
        if (e.isDirectory() && /^\d+\.[0-9a-f-]{36}$/.test(e.name) && !alive(Number(e.name.split('.')[0])))
          await removeGroup(path.join(base, e.name));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
