import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { GvisorExecutionEnvironment } from '../../../src/adapters/sandbox/gvisor-environment';
import { NamespaceExecutionEnvironment } from '../../../src/adapters/sandbox/namespace-environment';
import { SandboxClient } from '../../../src/adapters/sandbox/sandbox-client';
import { SandboxService, type ServiceAdapter } from '../../../src/adapters/sandbox/sandbox-service';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { DEFAULT_ENV_ALLOWLIST } from '../../../src/domain/sandbox/request-checks';
import type { EnvironmentHandle, ExecutionResult, ResourceLimits } from '../../../src/ports/execution-environment';

/**
 * Issue 28: the isolation and limits suite, and the red-team escape cases of plan §20.3, run the
 * same against both real adapters — bubblewrap (`namespace`) and gVisor (`gvisor`, Debian's runsc
 * driven with an OCI bundle) — reached the way the worker reaches them: a SandboxClient over the
 * execution service's unix socket. Every case is deterministic and must fail to escape on both.
 */
const hasPython = fs.existsSync('/usr/bin/python3');
const ADAPTERS: Array<[string, boolean, (root: string) => ServiceAdapter]> = [
  [
    'namespace',
    fs.existsSync('/usr/bin/bwrap') && hasPython,
    (root) => new NamespaceExecutionEnvironment({ root, envAllowlist: DEFAULT_ENV_ALLOWLIST }),
  ],
  [
    'gvisor',
    fs.existsSync('/usr/bin/runsc') && hasPython,
    (root) => new GvisorExecutionEnvironment({ root, envAllowlist: DEFAULT_ENV_ALLOWLIST }),
  ],
];
for (const [name, available] of ADAPTERS)
  if (!available)
    process.stderr.write(
      `isolation suite: skipping ${name}: ${name === 'gvisor' ? 'apt-get install -y runsc' : 'apt-get install -y bubblewrap'} (and python3) is missing\n`,
    );

const LIMITS: ResourceLimits = {
  wallClockSeconds: 30,
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
/** For the cases about another limit: CPU seconds that the case cannot reach first, even under load. */
const ROOMY_CPU: ResourceLimits = { ...LIMITS, cpuSeconds: 20 };
const SECRET = `redteam-${Math.random().toString(36).slice(2)}`;
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const py = (code: string) => ['python3', '-c', code];

describe.each(ADAPTERS)('the %s sandbox', (name, available, make) => {
  const d = available ? describe : describe.skip;
  let dir: string;
  let service: SandboxService;
  let client: SandboxClient;
  let canary: string;
  const live: EnvironmentHandle[] = [];

  async function env(limits: ResourceLimits = LIMITS): Promise<EnvironmentHandle> {
    const h = await client.provision({ tenantId: 't', runId: `run-${live.length}`, leaseSeconds: 300, limits });
    live.push(h);
    return h;
  }
  async function run(argv: string[], opts: { h?: EnvironmentHandle; timeout?: number } = {}): Promise<ExecutionResult> {
    return client.execute(opts.h ?? (await env()), {
      argv,
      timeoutSeconds: opts.timeout,
      collectChangedUpToBytes: 1 << 20,
    });
  }
  async function healthy(): Promise<void> {
    const r = await run(py('print(6*7)'));
    expect([r.reason, r.exitCode, text(r.stdout)]).toEqual(['exited', 0, '42\n']);
  }

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), `sbx-${name}-`));
    fs.chmodSync(dir, 0o755);
    // A host file any uid may read: the sandbox must still not see it, by any path.
    canary = path.join(dir, 'canary.txt');
    fs.writeFileSync(canary, SECRET, { mode: 0o644 });
    process.env.AGENT_REDTEAM_SECRET = SECRET;
    service = new SandboxService({
      socketPath: path.join(dir, 'run', 'sandboxd.sock'),
      adapter: make(path.join(dir, 'sandboxes')),
      log: silentLogger,
    });
    if (available) await service.start();
    client = new SandboxClient({ socketPath: path.join(dir, 'run', 'sandboxd.sock') });
  }, 60_000);
  afterAll(async () => {
    delete process.env.AGENT_REDTEAM_SECRET;
    for (const h of live) await client.destroy(h).catch(() => undefined);
    client.close();
    if (available) await service.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  d('isolation', () => {
    it('runs a program and reports every limit with what enforced it', async () => {
      const r = await run(py('print(6*7)'));
      expect([r.reason, r.exitCode, text(r.stdout)]).toEqual(['exited', 0, '42\n']);
      expect(r.limits?.memoryBytes.value).toBe(LIMITS.memoryBytes);
      expect(r.limits?.wallClockSeconds.via).toBe('service');
      expect(r.limits?.seccomp).toBe(name === 'gvisor' ? 'gvisor' : 'bpf');
      if (process.getuid?.() === 0) expect(r.limits?.workspaceBytes.via).toBe('tmpfs');
    });

    it('has no capability and cannot write outside /workspace and /tmp', async () => {
      const r = await run(
        py(
          [
            'import os',
            'print([l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])',
            'for p in ["/etc/x", "/usr/x", "/x", "/workspace/x", "/tmp/x"]:',
            '  try: open(p, "w").write("x"); print(p, "ok")',
            '  except OSError as e: print(p, "refused")',
          ].join('\n'),
        ),
      );
      expect(text(r.stdout).trim().split('\n')).toEqual([
        '0000000000000000',
        '/etc/x refused',
        '/usr/x refused',
        '/x refused',
        '/workspace/x ok',
        '/tmp/x ok',
      ]);
    });
  });

  d('red team: every escape fails', () => {
    it('cannot read host files, through /proc/1/root or directly', async () => {
      const r = await run(
        py(
          [
            `for p in [${JSON.stringify(canary)}, "/proc/1/root${canary}", "/proc/1/root/etc/shadow", "/etc/shadow", "/proc/1/cwd/../../etc/shadow"]:`,
            '  try: print(p, open(p).read()[:40])',
            '  except OSError as e: print(p, "refused", e.errno)',
          ].join('\n'),
        ),
      );
      expect(text(r.stdout)).not.toContain(SECRET);
      expect(text(r.stdout)).not.toMatch(/root:[^:]*:\d+/);
      expect(text(r.stdout).trim().split('\n')).toHaveLength(5);
    });

    it("cannot reach the host's loopback or the metadata address", async () => {
      let accepted = 0;
      const server = net.createServer((s) => {
        accepted++;
        s.end('hello');
      });
      await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const r = await run(
          py(
            [
              'import socket',
              `for host, port in [("127.0.0.1", ${port}), ("169.254.169.254", 80), ("10.0.2.2", 80)]:`,
              '  s = socket.socket(); s.settimeout(2)',
              '  try: s.connect((host, port)); print(host, "connected", s.recv(5))',
              '  except OSError as e: print(host, "refused")',
            ].join('\n'),
          ),
        );
        expect(text(r.stdout).trim().split('\n')).toEqual([
          '127.0.0.1 refused',
          '169.254.169.254 refused',
          '10.0.2.2 refused',
        ]);
        expect(accepted).toBe(0);
      } finally {
        server.close();
      }
    });

    it('cannot ptrace a sibling (EPERM)', async () => {
      const r = await run(
        py(
          [
            'import ctypes, os, subprocess, time',
            'libc = ctypes.CDLL(None, use_errno=True)',
            'p = subprocess.Popen(["sleep", "5"]); time.sleep(0.2)',
            'r = libc.ptrace(16, p.pid, None, None)',
            'print(r, ctypes.get_errno()); p.kill()',
          ].join('\n'),
        ),
      );
      expect(text(r.stdout).trim()).toBe('-1 1');
    });

    it('a fork bomb is stopped (pids) and the service stays healthy', async () => {
      // A generous CPU budget, so that on a loaded machine the CPU clock cannot stop it before the
      // pids limit does (gVisor counts its own work in the sandbox's cgroup): this case is about pids.
      const r = await run(py('import os\nwhile True:\n  os.fork()'), { h: await env(ROOMY_CPU) });
      expect(r.reason).toBe('pids');
      await healthy();
    }, 60_000);

    it('a memory hog is killed at the memory limit (memory_limit)', async () => {
      const r = await run(py('x = bytearray(1024 * 1024 * 1024)\nprint(len(x))'), { h: await env(ROOMY_CPU) });
      expect(r.reason).toBe('memory');
      expect(text(r.stdout)).toBe('');
      if (process.getuid?.() === 0) expect(r.reasonDetail).toMatch(/^memory_limit/);
      await healthy();
    }, 60_000);

    it('a 1 GB write fails at the workspace quota; the host disk and the next environment are untouched', async () => {
      const free = fs.statfsSync(dir);
      const r = await run(
        py(
          [
            '# 1 GB in 1 MiB writes, four per file (each file under the file size limit)',
            'for i in range(1024):',
            '  open("f%d" % (i // 4), "ab").write(b"x" * (1024 * 1024))',
          ].join('\n'),
        ),
      );
      expect(r.reason).toBe('disk');
      expect(text(r.stderr)).toMatch(/No space left on device|File too large/);
      const written = r.filesChanged.reduce((a, f) => a + f.sizeBytes, 0);
      expect(written).toBeLessThanOrEqual(LIMITS.workspaceBytes + (process.getuid?.() === 0 ? 0 : 8 << 20));
      expect(fs.statfsSync(dir).bavail * free.bsize).toBeGreaterThan(free.bavail * free.bsize - (64 << 20));
      await healthy();
    }, 60_000);

    it('a symlink to a host file or directory is never followed by the service', async () => {
      const r = await run(
        py(
          [
            'import os',
            `os.symlink(${JSON.stringify(canary)}, "to-canary")`,
            'os.symlink("/etc", "etc-dir")',
            `os.symlink(${JSON.stringify(path.dirname(canary))}, "host-dir")`,
            'os.mkdir("real"); open("real/canary.txt", "w").write("mine")',
          ].join('\n'),
        ),
      );
      expect(r.exitCode).toBe(0);
      expect(r.filesChanged.map((f) => f.path).sort()).toEqual(['real/canary.txt']);
      for (const f of r.filesChanged)
        expect(Buffer.from(f.contentBase64 ?? '', 'base64').toString()).not.toContain(SECRET);
    });

    it('a directory swapped for a symlink while the service reads it is not followed (race, both ways)', async () => {
      const h = await env();
      const r = await run(
        py(
          [
            'import os, time, subprocess, sys',
            'os.mkdir("d"); open("d/canary.txt", "w").write("mine")',
            // A child keeps swapping d between the directory and a link to the host directory
            // holding the canary while the service walks and reads the workspace.
            `target = ${JSON.stringify(path.dirname(canary))}`,
            `code = "import os\\nwhile True:\\n  os.rename('d', 'd.real'); os.symlink(%r, 'd'); os.unlink('d'); os.rename('d.real', 'd')" % target`,
            'subprocess.Popen([sys.executable, "-c", code], start_new_session=True)',
            'time.sleep(0.3)',
          ].join('\n'),
        ),
        { h },
      );
      expect(r.exitCode).toBe(0);
      for (const f of r.filesChanged)
        expect(Buffer.from(f.contentBase64 ?? '', 'base64').toString()).not.toContain(SECRET);
      const again = await run(py('print(1)'), { h });
      for (const f of again.filesChanged)
        expect(Buffer.from(f.contentBase64 ?? '', 'base64').toString()).not.toContain(SECRET);
    });

    it("cannot read the service's or the worker's environment variables", async () => {
      const r = await run(
        py(
          [
            'import os, glob',
            'print(dict(os.environ))',
            'for p in glob.glob("/proc/*/environ"):',
            '  try: print(p, open(p, "rb").read())',
            '  except OSError: pass',
          ].join('\n'),
        ),
      );
      expect(r.exitCode).toBe(0);
      expect(text(r.stdout)).not.toContain(SECRET);
      expect(text(r.stdout)).not.toContain('DATABASE_URL');
    });

    it('seccomp: each denied syscall family fails with EPERM, ordinary calls still work', async () => {
      const calls: Array<[string, string]> = [
        ['ptrace', 'libc.syscall(101, 0, 1, 0, 0)'],
        ['mount', 'libc.syscall(165, b"none", b"/tmp", b"tmpfs", 0, 0)'],
        ['keyctl', 'libc.syscall(250, 0, 0, 0, 0)'],
        ['bpf', 'libc.syscall(321, 0, 0, 0)'],
        ['perf_event_open', 'libc.syscall(298, 0, 0, -1, -1, 0)'],
        ['userfaultfd', 'libc.syscall(323, 0)'],
        ['kexec_load', 'libc.syscall(246, 0, 0, 0, 0)'],
        ['init_module', 'libc.syscall(175, 0, 0, b"")'],
        ['unshare', 'libc.syscall(272, 0x10000000)'],
        ['setns', 'libc.syscall(308, 0, 0)'],
        ['clone_newuser', 'libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)'],
      ];
      const r = await run(
        py(
          [
            'import ctypes, os',
            'libc = ctypes.CDLL(None, use_errno=True)',
            ...calls.map(
              ([n, c]) => `ctypes.set_errno(0); r = ${c}; print(${JSON.stringify(n)}, r, ctypes.get_errno())`,
            ),
            'print("getpid", os.getpid() > 0)',
          ].join('\n'),
        ),
      );
      expect(text(r.stdout).trim().split('\n')).toEqual([...calls.map(([n]) => `${n} -1 1`), 'getpid True']);
    });
  });

  d('limits', () => {
    it('a CPU spin → cpu', async () => {
      const r = await run(py('while True: pass'));
      expect(r.reason).toBe('cpu');
    }, 60_000);

    it('an infinite sleep → timeout (the service enforces the wall clock)', async () => {
      const r = await run(['sleep', 'infinity'], { timeout: 1 });
      expect(r.reason).toBe('timeout');
      await healthy();
    }, 60_000);

    it('an output flood → output, cut at the cap', async () => {
      const r = await run(py('import sys\nwhile True: sys.stdout.write("y" * 65536)'));
      expect(r.reason).toBe('output');
      expect(r.stdout.length + r.stderr.length).toBeLessThanOrEqual(LIMITS.maxOutputBytes);
    }, 60_000);

    it('a normal failure is `exited` with its code', async () => {
      const r = await run(py('import sys; sys.exit(3)'));
      expect([r.reason, r.exitCode]).toEqual(['exited', 3]);
    });
  });
});
