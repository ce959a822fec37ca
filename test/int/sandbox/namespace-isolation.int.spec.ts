import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { NamespaceExecutionEnvironment } from '../../../src/adapters/sandbox/namespace-environment';
import { SandboxClient } from '../../../src/adapters/sandbox/sandbox-client';
import { SandboxService } from '../../../src/adapters/sandbox/sandbox-service';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { projectRoot } from '../../../src/config/project-root';
import { DEFAULT_ENV_ALLOWLIST } from '../../../src/domain/sandbox/request-checks';
import type { EnvironmentHandle, ExecutionResult, ResourceLimits } from '../../../src/ports/execution-environment';

/**
 * Acceptance of the isolated-execution issue against the real `namespace` adapter (bubblewrap),
 * reached the way the worker reaches it: a SandboxClient over the execution service's unix socket.
 */
const hasBwrap = fs.existsSync('/usr/bin/bwrap') && fs.existsSync('/usr/bin/prlimit');
const hasPython = fs.existsSync('/usr/bin/python3');
const d = hasBwrap && hasPython ? describe : describe.skip;

const LIMITS: ResourceLimits = {
  wallClockSeconds: 20,
  cpuSeconds: 2,
  memoryBytes: 256 * 1024 * 1024,
  maxProcesses: 32,
  maxFileBytes: 4 * 1024 * 1024,
  workspaceBytes: 16 * 1024 * 1024,
  workspaceFiles: 500,
  tmpBytes: 2 * 1024 * 1024,
  maxOpenFiles: 64,
  maxOutputBytes: 64 * 1024,
};

let dir: string;
let service: SandboxService;
let client: SandboxClient;
let adapter: NamespaceExecutionEnvironment;
const live: EnvironmentHandle[] = [];

/** The test process's own network namespace, read before any command ran. */
const HOST_NET = fs.readlinkSync('/proc/thread-self/ns/net');
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
async function env(files: { path: string; content: string }[] = []): Promise<EnvironmentHandle> {
  const h = await client.provision({
    tenantId: 'tenant-a',
    runId: `run-${live.length}`,
    leaseSeconds: 300,
    limits: LIMITS,
    files: files.map((f) => ({ path: f.path, contentBase64: Buffer.from(f.content).toString('base64') })),
  });
  live.push(h);
  return h;
}
async function run(argv: string[], h?: EnvironmentHandle, timeoutSeconds?: number): Promise<ExecutionResult> {
  return client.execute(h ?? (await env()), { argv, timeoutSeconds });
}
async function healthy(): Promise<void> {
  expect((await client.health()).ok).toBe(true);
  const r = await run(['python3', '-c', 'print(6*7)']);
  expect([r.reason, r.exitCode, text(r.stdout)]).toEqual(['exited', 0, '42\n']);
}
/** Host pids whose command line contains `token`. */
function hostPidsWith(token: string): number[] {
  const out: number[] = [];
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(token)) out.push(Number(p));
    } catch {
      /* exited */
    }
  }
  return out;
}

/** How many descriptors of this process are open on the namespace `link` names (e.g. `net:[4026532178]`). */
function serviceDescriptorsOf(link: string): number {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === link) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/**
 * Runs `fn` against an environment of a second adapter built with `options` (its own workspace
 * root), destroyed afterwards.
 */
async function inOwnAdapter(
  name: string,
  options: Partial<ConstructorParameters<typeof NamespaceExecutionEnvironment>[0]>,
  fn: (exec: (argv: string[]) => Promise<ExecutionResult>) => Promise<void>,
): Promise<void> {
  const own = new NamespaceExecutionEnvironment({
    root: path.join(dir, `sandboxes-${name}`),
    envAllowlist: DEFAULT_ENV_ALLOWLIST,
    ...options,
  });
  const h = await own.provision({ tenantId: 't', runId: name, leaseSeconds: 60, limits: LIMITS });
  try {
    await fn((argv) => own.execute(h, { argv }));
  } finally {
    await own.destroy(h);
  }
}

/** /dev holds the six devices and their links, each usable; the root is a read-only mount showing no host path. */
async function checkDevAndRoot(exec: (argv: string[]) => Promise<ExecutionResult>): Promise<void> {
  const r = await exec([
    'python3',
    '-c',
    [
      'import os, stat',
      'for n in sorted(os.listdir("/dev")):',
      '  st = os.lstat("/dev/" + n)',
      '  kind = "c %d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)) if stat.S_ISCHR(st.st_mode) else "l " + os.readlink("/dev/" + n) if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else "?"',
      '  print(n, kind)',
      'open("/dev/null", "w").write("x"); open("/dev/full", "rb").read(1)',
      'print(len(open("/dev/urandom", "rb").read(16)), open("/dev/zero", "rb").read(2))',
      'print(sorted(os.listdir("/")))',
      'for l in open("/proc/self/mountinfo"):',
      '  f = l.split(); print("mount", f[4], f[5].split(",")[0])',
    ].join('\n'),
  ]);
  const lines = text(r.stdout).trim().split('\n');
  expect(lines.slice(0, 11)).toEqual([
    'fd l /proc/self/fd',
    'full c 1:7',
    'null c 1:3',
    'random c 1:8',
    'shm d',
    'stderr l /proc/self/fd/2',
    'stdin l /proc/self/fd/0',
    'stdout l /proc/self/fd/1',
    'tty c 5:0',
    'urandom c 1:9',
    'zero c 1:5',
  ]);
  expect(lines[11]).toBe("16 b'\\x00\\x00'");
  const top = JSON.parse(lines[12].replace(/'/g, '"')) as string[];
  for (const name of top)
    expect([
      'bin',
      'dev',
      'etc',
      'lib',
      'lib32',
      'lib64',
      'libx32',
      'proc',
      // Holds only the (empty) mountpoint of the tool bridge's socket.
      'run',
      'sbin',
      'tmp',
      'usr',
      'workspace',
    ]).toContain(name);
  const mounts = Object.fromEntries(lines.filter((l) => l.startsWith('mount ')).map((l) => l.split(' ').slice(1)));
  // The root and /usr are read-only mounts; only the workspace and the two tmpfs are writable places
  // (the device binds are rw mounts of device nodes, as with bubblewrap's own --dev).
  expect(mounts['/']).toBe('ro');
  expect(mounts['/usr']).toBe('ro');
  expect(mounts['/workspace']).toBe('rw');
  expect(mounts['/tmp']).toBe('rw');
  expect(mounts['/dev/shm']).toBe('rw');
  expect(Object.keys(mounts)).not.toContain('/dev/pts');
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-int-'));
  fs.chmodSync(dir, 0o755);
  adapter = new NamespaceExecutionEnvironment({
    root: path.join(dir, 'sandboxes'),
    envAllowlist: DEFAULT_ENV_ALLOWLIST,
  });
  const socketPath = path.join(dir, 'run', 'sandboxd.sock');
  service = new SandboxService({ socketPath, adapter, log: silentLogger });
  if (hasBwrap && hasPython) await service.start();
  client = new SandboxClient({ socketPath });
});
afterAll(async () => {
  for (const h of live) await client.destroy(h).catch(() => undefined);
  if (hasBwrap && hasPython) await service.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

d('the namespace sandbox isolates', () => {
  it('cannot open a TCP connection to a server on the host loopback', async () => {
    let accepted = 0;
    const server = net.createServer((s) => {
      accepted++;
      s.on('error', () => undefined);
      s.end('hello');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    try {
      // The host can reach it (the server is real) ...
      await new Promise<void>((resolve, reject) => {
        const c = net.connect(port, '127.0.0.1', () => {
          c.destroy();
          resolve();
        });
        c.once('error', reject);
      });
      expect(accepted).toBe(1);
      // ... the sandbox cannot.
      const r = await run([
        'python3',
        '-c',
        `import socket\ntry:\n  socket.create_connection(("127.0.0.1", ${port}), timeout=3); print("CONNECTED")\nexcept OSError as e:\n  print("REFUSED", e.errno)`,
      ]);
      expect(text(r.stdout)).toMatch(/^REFUSED/);
      expect(accepted).toBe(1);
    } finally {
      server.close();
    }
  });

  it('cannot resolve a name', async () => {
    const r = await run([
      'python3',
      '-c',
      'import socket\ntry:\n  print(socket.getaddrinfo("example.com", 443))\nexcept OSError as e:\n  print("NO_DNS", type(e).__name__)',
    ]);
    expect(text(r.stdout)).toMatch(/^NO_DNS gaierror/);
  });

  it("cannot read /etc/shadow, the project's .env or its files", async () => {
    const root = projectRoot();
    const r = await run([
      'python3',
      '-c',
      `import os\nfor p in ["/etc/shadow", "${root}/.env", "${root}/package.json", "/root", "${os.homedir()}"]:\n  print(p, os.path.exists(p))`,
    ]);
    expect(r.exitCode).toBe(0);
    const lines = text(r.stdout).trim().split('\n');
    expect(lines).toHaveLength(5);
    for (const l of lines) expect(l).toMatch(/ False$/);
    // The files are really there on the host (the test would prove nothing otherwise).
    expect(fs.existsSync(path.join(root, 'package.json'))).toBe(true);
  });

  it("cannot see another run's workspace", async () => {
    const a = await env([{ path: 'secret.txt', content: 'tenant-a secret' }]);
    const b = await env();
    const aHost = path.join(dir, 'sandboxes', a.id);
    expect(fs.readFileSync(path.join(aHost, 'secret.txt'), 'utf8')).toBe('tenant-a secret');
    const r = await run(
      [
        'python3',
        '-c',
        `import os\nprint(sorted(os.listdir("/workspace")))\nprint(os.path.exists("${aHost}/secret.txt"), os.path.exists("${dir}"))`,
      ],
      b,
    );
    expect(text(r.stdout)).toBe('[]\nFalse False\n');
    const own = await run(['cat', 'secret.txt'], a);
    expect(text(own.stdout)).toBe('tenant-a secret');
  });

  it("sees none of the worker's environment variables", async () => {
    process.env.DATABASE_URL = 'postgres://user:hunter2@127.0.0.1/agent';
    process.env.OPENAI_API_KEY = 'sk-test-not-a-real-key-0123456789';
    const r = await run(['python3', '-c', 'import os\nfor k in sorted(os.environ): print(k + "=" + os.environ[k])']);
    const seen = Object.fromEntries(
      text(r.stdout)
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(Object.keys(seen).sort()).toEqual(expect.arrayContaining(['HOME', 'LANG', 'PATH', 'TMPDIR', 'USER']));
    for (const name of Object.keys(seen))
      expect(['HOME', 'LANG', 'PATH', 'TMPDIR', 'USER', 'PWD', 'LC_CTYPE', 'SHLVL', '_']).toContain(name);
    for (const [k, v] of Object.entries(process.env)) {
      if (!v || ['HOME', 'LANG', 'PATH', 'TMPDIR', 'USER', 'PWD', 'SHLVL', '_', 'LC_CTYPE'].includes(k)) continue;
      expect(Object.values(seen)).not.toContain(v);
    }
    expect(seen.HOME).toBe('/workspace');
    delete process.env.DATABASE_URL;
    delete process.env.OPENAI_API_KEY;
  });

  it('has no capability and a downed loopback that it cannot bring up', async () => {
    const h = await env();
    const caps = await run(['/bin/sh', '-c', 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb)" /proc/self/status'], h);
    expect(text(caps.stdout).trim().split('\n')).toEqual([
      'CapInh:\t0000000000000000',
      'CapPrm:\t0000000000000000',
      'CapEff:\t0000000000000000',
      'CapBnd:\t0000000000000000',
      'CapAmb:\t0000000000000000',
    ]);
    const ip = fs.existsSync('/usr/sbin/ip') ? '/usr/sbin/ip' : '/usr/bin/ip';
    const link = await run([ip, '-o', 'link', 'show'], h);
    const lines = text(link.stdout).trim().split('\n');
    expect(lines).toHaveLength(1); // no interface but the loopback
    expect(lines[0]).toMatch(/^1: lo: <LOOPBACK>.*state DOWN/);
    const up = await run([ip, 'link', 'set', 'lo', 'up'], h);
    expect(up.exitCode).not.toBe(0);
    expect(text(up.stderr)).toMatch(/Operation not permitted/);
  });

  it("has a network namespace of its own, not the host's, that goes with the environment", async () => {
    const a = await env();
    const b = await env();
    const ns = async (h: EnvironmentHandle) => text((await run(['readlink', '/proc/self/ns/net'], h)).stdout).trim();
    const [a1, a2, b1] = [await ns(a), await ns(a), await ns(b)];
    expect(a1).toMatch(/^net:\[\d+\]$/);
    expect(a1).not.toBe(HOST_NET);
    expect(b1).not.toBe(a1);
    // The service's thread is back in its own namespace after forking each sandbox.
    expect(fs.readlinkSync('/proc/thread-self/ns/net')).toBe(HOST_NET);
    if (process.getuid!() === 0) {
      // As root the environment's namespace is made once at provision, held by a descriptor of the
      // service (this process here) and entered by each command; destroying the environment closes it.
      expect(a2).toBe(a1);
      expect(serviceDescriptorsOf(a1)).toBe(1);
      await client.destroy(a);
      expect(serviceDescriptorsOf(a1)).toBe(0);
      expect(serviceDescriptorsOf(b1)).toBe(1);
    } else {
      expect(a2).not.toBe(a1); // each command's launcher makes a fresh one
    }
  });

  it('can write only to /workspace, /tmp and /dev/shm (the root, /etc, /dev and /usr are read-only)', async () => {
    const h = await env();
    const r = await run(
      [
        '/bin/sh',
        '-c',
        'for d in / /etc /dev /usr /workspace /tmp /dev/shm; do (echo x > "$d/probe") 2>/dev/null && echo "$d rw" || echo "$d ro"; done; echo x > /dev/null && echo "/dev/null ok"',
      ],
      h,
    );
    expect(text(r.stdout).trim().split('\n')).toEqual([
      '/ ro',
      '/etc ro',
      '/dev ro',
      '/usr ro',
      '/workspace rw',
      '/tmp rw',
      '/dev/shm rw',
      '/dev/null ok',
    ]);
    // /etc is the adapter's copy: the synthetic passwd, the loader's cache, never the shadow file.
    const etc = await run(['python3', '-c', 'import os\nprint(sorted(os.listdir("/etc")))'], h);
    const names = JSON.parse(text(etc.stdout).replace(/'/g, '"')) as string[];
    expect(names).toEqual(expect.arrayContaining(['group', 'ld.so.cache', 'passwd']));
    expect(names).not.toContain('shadow');
  });

  it('has a /dev of six devices and no more, and a read-only root that shows nothing of the host', async () => {
    const h = await env();
    await checkDevAndRoot((argv) => run(argv, h));
  });

  it('reports the files each command changed, command after command in one environment', async () => {
    const h = await env([{ path: 'seed.txt', content: 'seed' }]);
    const changed = async (code: string) => {
      const r = await client.execute(h, { argv: ['python3', '-c', code], collectChangedUpToBytes: 1024 });
      expect(r.exitCode).toBe(0);
      return r.filesChanged.map((f) => [
        f.path,
        f.contentBase64 ? Buffer.from(f.contentBase64, 'base64').toString() : null,
      ]);
    };
    expect(await changed('pass')).toEqual([]); // the seed as provisioned is the first "before"
    expect(await changed('open("a.txt", "w").write("a1")')).toEqual([['a.txt', 'a1']]);
    expect(await changed('open("b.txt", "w").write("b1")')).toEqual([['b.txt', 'b1']]);
    expect(await changed('open("a.txt", "w").write("a2")')).toEqual([['a.txt', 'a2']]);
    expect(await changed('open("seed.txt", "w").write("seed2")')).toEqual([['seed.txt', 'seed2']]);
    // Two at once in one environment: each reports against what it found, and the next one is right again.
    const both = await Promise.all([
      changed('import time; time.sleep(0.3); open("c.txt", "w").write("c")'),
      changed('open("d.txt", "w").write("d")'),
    ]);
    expect(both.flat().map((f) => f[0])).toEqual(expect.arrayContaining(['c.txt', 'd.txt']));
    expect(await changed('open("e.txt", "w").write("e")')).toEqual([['e.txt', 'e']]);
  });

  it('closing the connection cancels the command, also on a connection that carried earlier calls', async () => {
    const h = await env();
    expect((await run(['true'], h)).exitCode).toBe(0);
    const token = `cancel-${Date.now()}`;
    const controller = new AbortController();
    let started!: () => void;
    const ready = new Promise<void>((r) => (started = r));
    const pending = client.execute(
      h,
      { argv: ['python3', '-c', 'import sys, time\nprint("started", flush=True)\ntime.sleep(1000)', token] },
      { signal: controller.signal, onOutput: () => started() },
    );
    await ready;
    expect(hostPidsWith(token).length).toBeGreaterThanOrEqual(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'cancelled' });
    for (let i = 0; i < 100 && hostPidsWith(token).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(hostPidsWith(token)).toEqual([]);
    await healthy();
  });

  it('runs as an unprivileged uid on the host', async () => {
    const h = await env();
    const r = await run(['python3', '-c', 'import os\nprint(os.getuid())\nopen("mine.txt", "w").write("x")'], h);
    expect(text(r.stdout)).toBe('0\n'); // in-sandbox root, without a single capability (next test)
    const st = fs.statSync(path.join(dir, 'sandboxes', h.id, 'mine.txt'));
    expect(st.uid).not.toBe(0);
    // Run as root, the service gives each environment its own uid from a pool (200000+); otherwise
    // the sandbox maps to the service's own (non-root) uid.
    if (process.getuid!() === 0) expect(st.uid).toBeGreaterThanOrEqual(200_000);
    else expect(st.uid).toBe(process.getuid!());
  });
});

d('/dev as a bind of each host device (a service not running as root, or a nodev filesystem)', () => {
  it('has the same /dev and read-only root', async () => {
    await inOwnAdapter('binds', { deviceNodes: false }, async (exec) => {
      await checkDevAndRoot(exec);
      const w = await exec(['/bin/sh', '-c', '(echo x > /dev/probe) 2>/dev/null && echo rw || echo ro']);
      expect(text(w.stdout)).toBe('ro\n');
    });
  });
});

d("without the service's own unshare/setns (koffi not loadable): an `unshare` launcher per command", () => {
  it('keeps the loopback down and the host unreachable, a fresh namespace per command', async () => {
    await inOwnAdapter('unshare', { processControls: false }, async (exec) => {
      const ip = fs.existsSync('/usr/sbin/ip') ? '/usr/sbin/ip' : '/usr/bin/ip';
      const link = await exec([ip, '-o', 'link', 'show']);
      expect(text(link.stdout).trim()).toMatch(/^1: lo: <LOOPBACK>.*state DOWN[^\n]*$/);
      // Both commands alive at once: the kernel reuses a freed namespace's inode number, so two
      // commands one after the other may print the same id although each had its own namespace.
      const readNs = ['/bin/sh', '-c', 'readlink /proc/self/ns/net; sleep 1'];
      const [ns1, ns2] = (await Promise.all([exec(readNs), exec(readNs)])).map((r) => text(r.stdout).trim());
      expect(ns1).toMatch(/^net:\[\d+\]$/);
      expect(ns1).not.toBe(HOST_NET);
      expect(ns2).not.toBe(ns1);
      const id = text((await exec(['id', '-u'])).stdout).trim();
      expect(id).toBe('0'); // in-sandbox root of its own user namespace, as on the service's own path
    });
  });
});

d('limits stop a command with the matching KillReason and the service stays healthy', () => {
  it('a fork bomb → pids', async () => {
    const r = await run(['python3', '-c', 'import os\nwhile True:\n  os.fork()']);
    expect(r.reason).toBe('pids');
    await healthy();
  });

  it('a memory hog → memory', async () => {
    const r = await run(['python3', '-c', 'x = bytearray(2 * 1024 * 1024 * 1024)']);
    expect(r.reason).toBe('memory');
    await healthy();
  });

  it('a CPU spin → cpu', async () => {
    const r = await run(['python3', '-c', 'while True: pass']);
    expect([r.reason, r.signal]).toEqual(['cpu', 'SIGXCPU']);
    await healthy();
  });

  it('an infinite sleep → timeout (the service enforces the wall clock)', async () => {
    const r = await run(['sleep', 'infinity'], undefined, 1);
    expect(r.reason).toBe('timeout');
    expect(r.exitCode).toBeNull();
    await healthy();
  });

  it('a disk filler → disk (file size limit, workspace quota and the /tmp and /dev/shm caps)', async () => {
    const big = await run(['python3', '-c', 'open("big", "wb").write(b"x" * (8 * 1024 * 1024))']);
    expect(big.reason).toBe('disk');
    const many = await run([
      'python3',
      '-c',
      'import os\nfor i in range(100000):\n  open("f%d" % i, "wb").write(b"y" * 65536)',
    ]);
    expect(many.reason).toBe('disk');
    const tmp = await run(['python3', '-c', 'open("/tmp/t", "wb").write(b"z" * (3 * 1024 * 1024))']);
    expect(tmp.reason).toBe('disk');
    const shm = await run(['python3', '-c', 'open("/dev/shm/t", "wb").write(b"z" * (3 * 1024 * 1024))']);
    expect(shm.reason).toBe('disk');
    await healthy();
  });

  it('an output flood → output, with the output cut at the cap', async () => {
    const r = await run(['python3', '-c', 'import sys\nwhile True: sys.stdout.write("y" * 65536)']);
    expect(r.reason).toBe('output');
    expect(r.outputTruncated).toBe(true);
    expect(r.stdout.length + r.stderr.length).toBeLessThanOrEqual(LIMITS.maxOutputBytes);
    await healthy();
  });

  it('a normal failure is `exited` with its code, not a limit', async () => {
    const r = await run(['python3', '-c', 'import sys; sys.exit(3)']);
    expect([r.reason, r.exitCode]).toEqual(['exited', 3]);
  });
});

d('destroy', () => {
  it('kills the whole sandbox process tree and removes the workspace', async () => {
    const h = await client.provision({ tenantId: 't', runId: 'tree', leaseSeconds: 60, limits: LIMITS });
    const token = `tree-${Date.now()}`;
    let started!: () => void;
    const ready = new Promise<void>((r) => (started = r));
    const pending = client.execute(
      h,
      {
        argv: [
          'python3',
          '-c',
          'import os, sys, time\nfor i in range(3):\n  if os.fork() == 0:\n    time.sleep(1000)\nprint("started", flush=True)\ntime.sleep(1000)',
          token,
        ],
      },
      { onOutput: () => started() },
    );
    await ready;
    expect(hostPidsWith(token).length).toBeGreaterThanOrEqual(4);
    await client.destroy(h);
    const r = await pending;
    expect(r.reason).toBe('cancelled');
    expect(hostPidsWith(token)).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'sandboxes', h.id))).toBe(false);
    await healthy();
  });

  it('the reaper destroys an environment whose lease expired', async () => {
    const h = await client.provision({ tenantId: 't', runId: 'lease', leaseSeconds: 1, limits: LIMITS });
    expect(fs.existsSync(path.join(dir, 'sandboxes', h.id))).toBe(true);
    expect(await service.reap(Date.parse(h.leaseExpiresAt) + 1)).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(path.join(dir, 'sandboxes', h.id))).toBe(false);
    await expect(client.execute(h, { argv: ['true'] })).rejects.toMatchObject({ code: 'environment_not_found' });
  });
});
