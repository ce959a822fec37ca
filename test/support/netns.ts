import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Proc } from './processes';

/**
 * A little network of "hosts" on this machine: Linux network namespaces, one of which (`hub`) holds
 * a bridge that every other joins with a veth pair. Addresses are in 10.213.0.0/24 and exist only
 * inside these namespaces, so no traffic leaves them. Root only (`ip netns` needs CAP_SYS_ADMIN).
 */
export const SUBNET = '10.213.0';

/** Whether namespaces can be made here; warns once (with the reason) when not. */
export function canMakeNamespaces(what: string): boolean {
  const why =
    process.getuid?.() !== 0
      ? 'it needs root (network namespaces)'
      : spawnSync('ip', ['-V']).status !== 0
        ? '`ip` is missing (fix: apt-get install -y iproute2)'
        : probe();
  if (why === null) return true;
  console.warn(`${what} skipped: ${why}`);
  return false;
}

function probe(): string | null {
  const name = `acprobe${process.pid}`;
  const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
  if (r.status !== 0) return `ip netns add failed: ${r.stderr.trim()}`;
  spawnSync('ip', ['netns', 'del', name]);
  return null;
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}

export interface Host {
  readonly name: string;
  readonly ns: string;
  readonly address: string;
  /** A private directory for this host's local state. */
  readonly dir: string;
}

export class Lab {
  readonly hub: Host;
  private readonly hosts: Host[] = [];
  private readonly procs: Proc[] = [];

  private constructor(
    private readonly prefix: string,
    readonly dir: string,
  ) {
    this.hub = { name: 'hub', ns: `${prefix}-hub`, address: `${SUBNET}.1`, dir: path.join(dir, 'hub') };
  }

  /** The hub namespace with its bridge; removes namespaces that dead test runs left behind. */
  static create(): Lab {
    removeStale();
    const prefix = `ac${process.pid}`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-lab-'));
    fs.chmodSync(dir, 0o755);
    const lab = new Lab(prefix, dir);
    const hub = lab.hub.ns;
    ip('netns', 'add', hub);
    ip('-n', hub, 'link', 'set', 'lo', 'up');
    ip('-n', hub, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', hub, 'addr', 'add', `${lab.hub.address}/24`, 'dev', 'br0');
    ip('-n', hub, 'link', 'set', 'br0', 'up');
    fs.mkdirSync(lab.hub.dir, { mode: 0o755 });
    return lab;
  }

  /** A new namespace joined to the hub's bridge by a veth pair. */
  addHost(name: string): Host {
    const i = this.hosts.length + 1;
    const host: Host = {
      name,
      ns: `${this.prefix}-${name}`,
      address: `${SUBNET}.${10 + i}`,
      dir: path.join(this.dir, name),
    };
    ip('netns', 'add', host.ns);
    ip('-n', host.ns, 'link', 'set', 'lo', 'up');
    ip('-n', this.hub.ns, 'link', 'add', `veth${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', host.ns);
    ip('-n', this.hub.ns, 'link', 'set', `veth${i}`, 'master', 'br0', 'up');
    ip('-n', host.ns, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0');
    ip('-n', host.ns, 'link', 'set', 'eth0', 'up');
    fs.mkdirSync(host.dir, { mode: 0o755 });
    this.hosts.push(host);
    return host;
  }

  /** Runs `command` inside `host`'s namespace (as `user` when given), with exactly `env`. */
  run(host: Host, command: string[], env: Record<string, string>, user?: string): Proc {
    const argv = ['netns', 'exec', host.ns, ...(user ? ['runuser', '-u', user, '--'] : []), ...command];
    let out = '';
    const child = spawn('ip', argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const proc = { child, output: () => out, exited };
    this.procs.push(proc);
    return proc;
  }

  /** SIGKILLs every process in `host`'s namespace, as a host that loses power. */
  killHost(host: Host): number {
    const pids = spawnSync('ip', ['netns', 'pids', host.ns], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => /^\d+$/.test(l.trim()))
      .map(Number);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    return pids.length;
  }

  /** Kills what runs in every namespace, deletes them and the lab's directory. */
  async destroy(): Promise<void> {
    for (const h of [...this.hosts].reverse()) this.killHost(h);
    this.killHost(this.hub);
    for (const p of this.procs) if (p.child.exitCode === null && p.child.signalCode === null) await p.exited;
    for (const h of [...this.hosts, this.hub]) spawnSync('ip', ['netns', 'del', h.ns]);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Namespaces named `ac<pid>-…` whose test process is gone. */
function removeStale(): void {
  const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
  for (const line of list.split('\n')) {
    const m = /^(ac(\d+)-\S+)/.exec(line.trim());
    if (!m) continue;
    try {
      process.kill(Number(m[2]), 0);
    } catch {
      spawnSync('ip', ['netns', 'del', m[1]]);
    }
  }
}
