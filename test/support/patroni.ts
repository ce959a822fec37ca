import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from './fleet/processes';

/**
 * A two-node PostgreSQL 15 cluster under Patroni, with etcd as its store and HAProxy routing to the
 * leader through Patroni's REST check — the recipe of docs/operations/ha.md, on loopback ports.
 */
const BINARIES = ['/usr/bin/patroni', '/usr/bin/etcd', '/usr/sbin/haproxy', '/usr/lib/postgresql/15/bin/postgres'];

/** Whether Debian's patroni, etcd-server, haproxy and postgresql-15 are installed; warns once (with the fix) when not. */
export function havePatroni(what: string): boolean {
  const missing = BINARIES.filter((b) => !fs.existsSync(b));
  if (missing.length === 0) return true;
  console.warn(
    `${what} skipped: ${missing.join(', ')} missing (fix: apt-get install -y patroni etcd-server haproxy postgresql-15)`,
  );
  return false;
}

interface Daemon {
  readonly child: ChildProcess;
  log(): string;
}

function daemon(cmd: string, args: string[], opts: { uid?: number; gid?: number; cwd?: string } = {}): Daemon {
  let out = '';
  const child = spawn(cmd, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', LC_ALL: 'C.UTF-8', HOME: opts.cwd ?? os.tmpdir() },
    ...opts,
  });
  const keep = (c: Buffer) => {
    out += c.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, log: () => out };
}

export interface PatroniNode {
  readonly name: string;
  readonly pgPort: number;
  readonly restPort: number;
  readonly dataDir: string;
  agent: Daemon | null;
}

export class PatroniCluster {
  private etcd: Daemon | null = null;
  private haproxy: Daemon | null = null;
  readonly nodes: PatroniNode[] = [];
  private haproxyPort = 0;
  private readonly user = postgresUser();

  private constructor(readonly dir: string) {}

  /** `postgres://postgres@127.0.0.1:<haproxy>/<db>`: always the leader, whichever node it is. */
  url(db: string): string {
    return `postgres://postgres@127.0.0.1:${this.haproxyPort}/${db}`;
  }

  directUrl(node: PatroniNode, db: string): string {
    return `postgres://postgres@127.0.0.1:${node.pgPort}/${db}`;
  }

  /** etcd, the first node (the leader), the second (a synchronous replica when `synchronous`), HAProxy. */
  static async start(opts: { synchronous: boolean }): Promise<PatroniCluster> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-patroni-'));
    const c = new PatroniCluster(dir);
    try {
      fs.chmodSync(dir, 0o755);
      fs.chownSync(dir, c.user.uid, c.user.gid);
      await c.startEtcd();
      const scope = `agent-core-${process.pid}`;
      for (const name of ['pg1', 'pg2']) {
        const node = {
          name,
          pgPort: await freePort(),
          restPort: await freePort(),
          dataDir: path.join(dir, name),
          agent: null,
        };
        c.nodes.push(node);
        c.writeConfig(node, scope, opts.synchronous);
        c.startAgent(node);
        await c.waitForRole(node, name === 'pg1' ? 'primary' : 'replica', 120_000);
      }
      if (opts.synchronous) await c.waitForRole(c.nodes[1], 'synchronous', 60_000);
      await c.startHaproxy();
      return c;
    } catch (e) {
      await c.stop();
      throw e;
    }
  }

  private async startEtcd(): Promise<void> {
    const client = await freePort();
    const peer = await freePort();
    this.etcdPort = client;
    this.etcd = daemon('/usr/bin/etcd', [
      '--name=e1',
      `--data-dir=${path.join(this.dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${client}`,
      `--advertise-client-urls=http://127.0.0.1:${client}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=e1=http://127.0.0.1:${peer}`,
    ]);
    await until('etcd', 30_000, async () => (await fetch(`http://127.0.0.1:${client}/health`)).ok, this.etcd);
  }

  private etcdPort = 0;

  private writeConfig(node: PatroniNode, scope: string, synchronous: boolean): void {
    const config = {
      scope,
      namespace: '/agent-core-test/',
      name: node.name,
      restapi: { listen: `127.0.0.1:${node.restPort}`, connect_address: `127.0.0.1:${node.restPort}` },
      etcd3: { hosts: `127.0.0.1:${this.etcdPort}` },
      bootstrap: {
        dcs: {
          // Patroni's minimum TTL; loop_wait + 2 × retry_timeout must stay under it.
          ttl: 20,
          loop_wait: 2,
          retry_timeout: 5,
          maximum_lag_on_failover: 16 * 1024 * 1024,
          synchronous_mode: synchronous,
          postgresql: {
            use_pg_rewind: false,
            parameters: { max_connections: 200, wal_level: 'replica', hot_standby: 'on', max_wal_senders: 10 },
          },
        },
        initdb: [{ encoding: 'UTF8' }, { locale: 'C' }],
        pg_hba: [
          'local all all trust',
          'host replication replicator 127.0.0.1/32 trust',
          'host all all 127.0.0.1/32 trust',
        ],
      },
      postgresql: {
        listen: `127.0.0.1:${node.pgPort}`,
        connect_address: `127.0.0.1:${node.pgPort}`,
        data_dir: node.dataDir,
        bin_dir: '/usr/lib/postgresql/15/bin',
        pgpass: path.join(this.dir, `${node.name}.pgpass`),
        authentication: {
          superuser: { username: 'postgres', password: 'unused-trust-auth' },
          replication: { username: 'replicator', password: 'unused-trust-auth' },
        },
        parameters: { unix_socket_directories: this.dir, shared_buffers: '64MB' },
      },
    };
    const file = path.join(this.dir, `${node.name}.yml`);
    fs.writeFileSync(file, JSON.stringify(config, null, 2)); // YAML is a superset of JSON
    fs.chownSync(file, this.user.uid, this.user.gid);
  }

  /** Starts (or restarts) a node's Patroni agent, as the postgres OS user. */
  startAgent(node: PatroniNode): void {
    node.agent = daemon('/usr/bin/patroni', [path.join(this.dir, `${node.name}.yml`)], { ...this.user, cwd: this.dir });
  }

  private async startHaproxy(): Promise<void> {
    this.haproxyPort = await freePort();
    const cfg = [
      'global',
      '  maxconn 1000',
      'defaults',
      '  mode tcp',
      '  timeout connect 2s',
      '  timeout client 30m',
      '  timeout server 30m',
      '  timeout check 1s',
      'listen primary',
      `  bind 127.0.0.1:${this.haproxyPort}`,
      '  option httpchk GET /primary',
      '  http-check expect status 200',
      '  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions',
      ...this.nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.pgPort} check port ${n.restPort}`),
      '',
    ].join('\n');
    const file = path.join(this.dir, 'haproxy.cfg');
    fs.writeFileSync(file, cfg);
    this.haproxy = daemon('/usr/sbin/haproxy', ['-db', '-f', file]);
    await until(
      'HAProxy routing to the leader',
      30_000,
      async () => {
        const { Client } = await import('pg');
        // HAProxy counts a server up until its checks say otherwise (and balances between those it
        // counts up), so one connection may land on the leader and the next on the replica: routed
        // means several connections in a row reach a writable server.
        for (let i = 0; i < 4; i++) {
          const c = new Client({ connectionString: this.url('postgres'), connectionTimeoutMillis: 1000 });
          await c.connect();
          try {
            const r = await c.query<{ writable: boolean }>('SELECT NOT pg_is_in_recovery() AS writable');
            if (!r.rows[0].writable) return false;
          } finally {
            await c.end();
          }
        }
        return true;
      },
      this.haproxy,
    );
  }

  /** The node whose Patroni REST API says it is the leader (`GET /primary` → 200), or null. */
  async leader(): Promise<PatroniNode | null> {
    for (const n of this.nodes) if (await this.is(n, 'primary')) return n;
    return null;
  }

  private async is(node: PatroniNode, role: 'primary' | 'replica' | 'synchronous'): Promise<boolean> {
    try {
      return (
        (await fetch(`http://127.0.0.1:${node.restPort}/${role}`, { signal: AbortSignal.timeout(1000) })).status === 200
      );
    } catch {
      return false;
    }
  }

  async waitForRole(node: PatroniNode, role: 'primary' | 'replica' | 'synchronous', ms: number): Promise<void> {
    await until(`${node.name} to be ${role}`, ms, () => this.is(node, role), node.agent ?? undefined);
  }

  /** Loses `node` as a host loses power: SIGKILL to its Patroni agent and its postmaster. */
  killNode(node: PatroniNode): void {
    const pidFile = path.join(node.dataDir, 'postmaster.pid');
    const postmaster = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]) : 0;
    node.agent?.child.kill('SIGKILL');
    if (postmaster > 0) {
      try {
        process.kill(postmaster, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }

  /** The log of every daemon, for a failure message. */
  logs(): string {
    const parts = [`etcd:\n${this.etcd?.log().slice(-1500)}`, `haproxy:\n${this.haproxy?.log().slice(-1500)}`];
    for (const n of this.nodes) parts.push(`${n.name}:\n${n.agent?.log().slice(-3000)}`);
    return parts.join('\n---\n');
  }

  async stop(): Promise<void> {
    for (const n of this.nodes) this.killNode(n);
    for (const d of [this.haproxy, this.etcd]) d?.child.kill('SIGKILL');
    // Backends of a SIGKILLed postmaster notice its death and exit by themselves; give them a moment.
    await new Promise((r) => setTimeout(r, 500));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

async function until(what: string, ms: number, fn: () => Promise<boolean>, d?: Daemon): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${d ? `:\n${d.log().slice(-3000)}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function postgresUser(): { uid: number; gid: number } {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0) throw new Error('patroni: no postgres OS user to run as');
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}
