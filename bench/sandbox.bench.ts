import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { silentLogger } from '../src/adapters/logging/pino-logger';
import { NamespaceExecutionEnvironment } from '../src/adapters/sandbox/namespace-environment';
import { SandboxClient } from '../src/adapters/sandbox/sandbox-client';
import { SandboxService } from '../src/adapters/sandbox/sandbox-service';
import { spawnSandboxd, waitForSocket } from '../src/adapters/sandbox';
import { DEFAULT_ENV_ALLOWLIST } from '../src/domain/sandbox/request-checks';
import * as net from 'node:net';
import { GvisorExecutionEnvironment } from '../src/adapters/sandbox/gvisor-environment';
import { ToolBridgeServer } from '../src/adapters/sandbox/tool-bridge-server';
import { systemClock } from '../src/adapters/system-clock';
import { projectRoot } from '../src/config/project-root';
import { PolicyEngine } from '../src/policy/policy-engine';
import { createBuiltinTools } from '../src/tools/builtin';
import { ToolRegistry } from '../src/tools/registry';
import { RegistryBridgeInvoker } from '../src/tools/sandbox/bridge-invoker';
import type { EnvironmentHandle, ResourceLimits } from '../src/ports/execution-environment';

/**
 * `npm run bench -- sandbox`: request → first byte of a trivial command and commands per second
 * through the whole path the worker uses — SandboxClient → unix socket → `agent sandboxd` (a
 * separate process, started as `agent start` starts it) → namespace adapter → bubblewrap — beside a
 * plain `child_process.spawn` of the same command from this process, in the same run (iterations
 * interleaved, so machine load hits both alike). Target: ≤ 3× the plain spawn. Also shown: the same
 * path with the service inside this process (what the adapter costs without the service process),
 * and the CPU time per command of each path (measured in phases of their own after the timed loop:
 * CPU time moves much less with the machine's load than wall time does).
 */
const ARGV = ['/bin/echo', 'hello'];
const N = Number(process.env.BENCH_SANDBOX_ITERATIONS ?? 40);
const LIMITS: ResourceLimits = {
  wallClockSeconds: 30,
  cpuSeconds: 10,
  memoryBytes: 512 * 1024 * 1024,
  maxProcesses: 32,
  maxFileBytes: 16 * 1024 * 1024,
  workspaceBytes: 64 * 1024 * 1024,
  workspaceFiles: 1000,
  tmpBytes: 16 * 1024 * 1024,
  maxOpenFiles: 64,
  maxOutputBytes: 1024 * 1024,
};

function plain(): Promise<{ firstByteMs: number; totalMs: number }> {
  const t0 = process.hrtime.bigint();
  let first = 0;
  return new Promise((resolve, reject) => {
    const c = spawn(ARGV[0], ARGV.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
    c.stdout.once('data', () => (first = Number(process.hrtime.bigint() - t0) / 1e6));
    c.stdout.resume();
    c.once('error', reject);
    c.once('close', () => resolve({ firstByteMs: first, totalMs: Number(process.hrtime.bigint() - t0) / 1e6 }));
  });
}

async function sandboxed(
  client: SandboxClient,
  env: EnvironmentHandle,
): Promise<{ firstByteMs: number; totalMs: number }> {
  const t0 = process.hrtime.bigint();
  let first = 0;
  const r = await client.execute(
    env,
    { argv: ARGV },
    {
      onOutput: () => {
        if (first === 0) first = Number(process.hrtime.bigint() - t0) / 1e6;
      },
    },
  );
  if (r.reason !== 'exited' || r.exitCode !== 0) throw new Error(`sandboxed command failed: ${r.reasonDetail}`);
  return { firstByteMs: first, totalMs: Number(process.hrtime.bigint() - t0) / 1e6 };
}

/**
 * Starts `agent sandboxd` (namespace adapter) on a socket under `dir` as `agent start` does
 * (spawnSandboxd: scrubbed environment); resolves once it listens.
 */
async function startSandboxd(dir: string): Promise<{ socketPath: string; stop(): Promise<void> }> {
  const socketPath = path.join(dir, 'sandboxd', 'sandboxd.sock');
  const child = spawnSandboxd(path.join(__dirname, '..', 'src', 'main.js'), {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    AGENT_DATA_DIR: path.join(dir, 'data'),
    SANDBOX_ADAPTER: 'namespace',
    SANDBOX_SOCKET: socketPath,
    SANDBOX_ROOT: path.join(dir, 'sandboxd-sandboxes'),
    LOG_LEVEL: 'warn',
  });
  await waitForSocket(socketPath, 60_000, child);
  return {
    socketPath,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function fullCycle(client: SandboxClient): Promise<number> {
  const t0 = process.hrtime.bigint();
  const env = await client.provision({ tenantId: 'bench', runId: 'bench', leaseSeconds: 60, limits: LIMITS });
  await client.execute(env, { argv: ARGV });
  await client.destroy(env);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/**
 * A CPU-accounting cgroup holding this process and everything it starts (sandboxd, the sandboxes),
 * when one can be made (root; cgroup v2, or v1's cpuacct). Processes' own counters are not enough:
 * bubblewrap's monitor exits without reaping the sandbox's PID 1, which the system's init then
 * reaps, so the sandboxed command's CPU never reaches sandboxd's `cutime`. Kernel work done later on
 * a worker thread (a network namespace is torn down that way) is not counted either way.
 */
interface CpuCgroup {
  usageMs(): number;
  close(): void;
}
function cpuCgroup(): CpuCgroup | null {
  const name = `agent-bench-sandbox-${process.pid}`;
  const tries: { dir: string; parent: string; read: (dir: string) => number }[] = [
    {
      dir: `/sys/fs/cgroup/${name}`,
      parent: '/sys/fs/cgroup',
      read: (d) => Number(/^usage_usec (\d+)$/m.exec(fs.readFileSync(`${d}/cpu.stat`, 'utf8'))![1]) / 1000,
    },
    {
      dir: `/sys/fs/cgroup/cpuacct/${name}`,
      parent: '/sys/fs/cgroup/cpuacct',
      read: (d) => Number(fs.readFileSync(`${d}/cpuacct.usage`, 'utf8')) / 1e6,
    },
  ];
  for (const t of tries) {
    if (!fs.existsSync(`${t.parent}/cgroup.procs`)) continue;
    if (t.parent === '/sys/fs/cgroup' && !fs.existsSync('/sys/fs/cgroup/cgroup.controllers')) continue;
    try {
      fs.mkdirSync(t.dir);
      fs.writeFileSync(`${t.dir}/cgroup.procs`, String(process.pid));
      t.read(t.dir);
      return {
        usageMs: () => t.read(t.dir),
        close: () => {
          try {
            fs.writeFileSync(`${t.parent}/cgroup.procs`, String(process.pid));
            fs.rmdirSync(t.dir);
          } catch {
            /* left for the system; it is empty once the bench has exited */
          }
        },
      };
    } catch {
      try {
        fs.writeFileSync(`${t.parent}/cgroup.procs`, String(process.pid));
        fs.rmdirSync(t.dir);
      } catch {
        /* not made */
      }
    }
  }
  return null;
}
/** CPU ms per call of `run`, everything in the cgroup counted (only `run`'s path is busy meanwhile). */
async function cpuPerCall(cg: CpuCgroup, run: () => Promise<unknown>, n: number): Promise<number> {
  const u0 = cg.usageMs();
  for (let i = 0; i < n; i++) await run();
  await new Promise((r) => setTimeout(r, 50)); // let the last sandbox finish exiting
  return (cg.usageMs() - u0) / n;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f = (n: number) => n.toFixed(1).padStart(7);

export async function runSandboxBench(): Promise<void> {
  if (!fs.existsSync('/usr/bin/bwrap')) {
    console.log('sandbox bench: /usr/bin/bwrap is not installed (apt-get install -y bubblewrap); nothing measured');
    return;
  }
  // Before anything is started: what this process starts is in the cgroup too.
  const cg = cpuCgroup();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-bench-'));
  fs.chmodSync(dir, 0o755);
  const adapter = new NamespaceExecutionEnvironment({
    root: path.join(dir, 'sandboxes'),
    envAllowlist: DEFAULT_ENV_ALLOWLIST,
  });
  // The socket's directory becomes 0700; the workspaces' ancestors must stay searchable by the sandbox uid.
  const socketPath = path.join(dir, 'run', 'sandboxd.sock');
  const service = new SandboxService({ socketPath, adapter, log: silentLogger });
  await service.start();
  const local = new SandboxClient({ socketPath });
  const sandboxd = await startSandboxd(dir);
  const client = new SandboxClient({ socketPath: sandboxd.socketPath });
  const env = await client.provision({ tenantId: 'bench', runId: 'bench', leaseSeconds: 600, limits: LIMITS });
  const localEnv = await local.provision({ tenantId: 'bench', runId: 'bench', leaseSeconds: 600, limits: LIMITS });
  try {
    for (let i = 0; i < 3; i++) {
      await plain();
      await sandboxed(client, env);
      await sandboxed(local, localEnv);
    }
    const p: { firstByteMs: number; totalMs: number }[] = [];
    const s: { firstByteMs: number; totalMs: number }[] = [];
    const l: { firstByteMs: number; totalMs: number }[] = [];
    const cycles: number[] = [];
    for (let i = 0; i < N; i++) {
      p.push(await plain());
      s.push(await sandboxed(client, env));
      l.push(await sandboxed(local, localEnv));
      if (i % 4 === 0) cycles.push(await fullCycle(client));
    }
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const pFirst = p.map((x) => x.firstByteMs);
    const sFirst = s.map((x) => x.firstByteMs);
    const pRate = (1000 * N) / sum(p.map((x) => x.totalMs));
    const sRate = (1000 * N) / sum(s.map((x) => x.totalMs));
    const lFirst = l.map((x) => x.firstByteMs);
    const lRate = (1000 * N) / sum(l.map((x) => x.totalMs));
    const cRate = (1000 * cycles.length) / sum(cycles);
    console.log(
      `sandbox bench: ${JSON.stringify(ARGV)}, ${N} iterations each, interleaved, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)}`,
    );
    console.log('                                   first byte ms: p50     p95 | commands/s');
    console.log(
      `plain child_process.spawn                   ${f(pct(pFirst, 50))} ${f(pct(pFirst, 95))} | ${f(pRate)}`,
    );
    console.log(
      `namespace (client→socket→sandboxd→bwrap)    ${f(pct(sFirst, 50))} ${f(pct(sFirst, 95))} | ${f(sRate)}`,
    );
    console.log(
      `  the same, service in this process         ${f(pct(lFirst, 50))} ${f(pct(lFirst, 95))} | ${f(lRate)}`,
    );
    console.log(
      `namespace provision+execute+destroy (tool)                 ${''.padStart(7)} | ${f(cRate)}  (${cycles.length} cycles)`,
    );
    const ratioFirst = pct(sFirst, 50) / pct(pFirst, 50);
    const ratioRate = pRate / sRate;
    if (cg) {
      const cpuN = Math.max(N, 100);
      const pCpu = await cpuPerCall(cg, plain, cpuN);
      const sCpu = await cpuPerCall(cg, () => sandboxed(client, env), cpuN);
      console.log(
        `CPU per command (cgroup, ${cpuN} each, one path at a time): plain ${pCpu.toFixed(1)} ms, namespace through sandboxd ${sCpu.toFixed(1)} ms (${(sCpu / pCpu).toFixed(2)}×)`,
      );
    } else console.log('CPU per command: not measured (no cgroup could be made; run as root for it)');
    console.log(
      `ratio namespace / plain: first byte ${ratioFirst.toFixed(2)}×, throughput ${ratioRate.toFixed(2)}× slower — target ≤ 3×: ${
        ratioFirst <= 3 && ratioRate <= 3 ? 'met' : 'NOT met'
      }`,
    );
    await gvisorAndBridge(dir);
  } finally {
    await client.destroy(env).catch(() => undefined);
    await local.destroy(localEnv).catch(() => undefined);
    await sandboxd.stop();
    await service.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    cg?.close();
  }
}

/** Issue 28: the gvisor adapter (service in this process) and the tool bridge's round trip per call. */
async function gvisorAndBridge(dir: string): Promise<void> {
  if (!fs.existsSync('/usr/bin/runsc'))
    console.log('gvisor: /usr/bin/runsc is not installed (apt-get install -y runsc); not measured');
  else {
    const socketPath = path.join(dir, 'gv', 'sandboxd.sock');
    const service = new SandboxService({
      socketPath,
      adapter: new GvisorExecutionEnvironment({
        root: path.join(dir, 'gv-sandboxes'),
        envAllowlist: DEFAULT_ENV_ALLOWLIST,
      }),
      log: silentLogger,
    });
    await service.start();
    const c = new SandboxClient({ socketPath });
    const h = await c.provision({ tenantId: 'bench', runId: 'bench', leaseSeconds: 600, limits: LIMITS });
    try {
      await sandboxed(c, h);
      const g: { firstByteMs: number; totalMs: number }[] = [];
      const n = Math.max(10, Math.round(N / 4));
      for (let i = 0; i < n; i++) g.push(await sandboxed(c, h));
      const first = g.map((x) => x.firstByteMs);
      const rate = (1000 * n) / g.reduce((a, x) => a + x.totalMs, 0);
      console.log(
        `gvisor (runsc run per command, in process) ${f(pct(first, 50))} ${f(pct(first, 95))} | ${f(rate)}  (${n} iterations)`,
      );
    } finally {
      await c.destroy(h).catch(() => undefined);
      c.close();
      await service.stop();
    }
  }
  const registry = new ToolRegistry();
  for (const t of createBuiltinTools()) registry.register(t);
  const policy = PolicyEngine.load(path.join(projectRoot(), 'config', 'policies'));
  const bridge = new ToolBridgeServer(
    path.join(dir, 'bridge'),
    new RegistryBridgeInvoker(registry, policy, systemClock),
  );
  const session = await bridge.open({
    runId: 'bench',
    sessionId: 's',
    tenantId: 't',
    principalId: 'p',
    parentInvocationId: 'i',
    tools: ['math.calculate'],
    callBudget: 100_000,
  });
  const conn = net.connect(session.socketPath);
  await new Promise((r) => conn.once('connect', r));
  let buf = '';
  const waiters: Array<() => void> = [];
  conn.on('data', (d) => {
    buf += d.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      buf = buf.slice(nl + 1);
      waiters.shift()?.();
    }
  });
  const rtt: number[] = [];
  for (let i = 0; i < 520; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      waiters.push(resolve);
      conn.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools.call', params: { token: session.token, name: 'math.calculate', arguments: { expression: `${i}^2+1` } } })}\n`,
      );
    });
    if (i >= 20) rtt.push(performance.now() - t0);
  }
  conn.destroy();
  await session.close();
  console.log(
    `bridge round trip per tool call (math.calculate, 500 calls): p50 ${pct(rtt, 50).toFixed(2)} ms, p95 ${pct(rtt, 95).toFixed(2)} ms — target p50 ≤ 5 ms: ${pct(rtt, 50) <= 5 ? 'met' : 'NOT met'}`,
  );
}
