import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { SandboxCgroups } from '../../../src/adapters/sandbox/cgroups';
import { ociConfig } from '../../../src/adapters/sandbox/oci-bundle';
import { DENIED_SYSCALLS } from '../../../src/adapters/sandbox/seccomp';
import { ToolBridgeServer } from '../../../src/adapters/sandbox/tool-bridge-server';
import { openInside, snapshot } from '../../../src/adapters/sandbox/workspace-fs';
import { isKernelIsolating, loadSandboxSettings, sharedKernelRefusal } from '../../../src/config/sandbox-settings';
import { checkBridge } from '../../../src/domain/sandbox/request-checks';
import type { ResourceLimits } from '../../../src/ports/execution-environment';

/** Issue 28's configuration and contracts that need no sandbox: settings, token mode, the bundle, the bridge. */
const LIMITS: ResourceLimits = {
  wallClockSeconds: 10,
  cpuSeconds: 2,
  memoryBytes: 1 << 28,
  maxProcesses: 32,
  maxFileBytes: 1 << 22,
  workspaceBytes: 1 << 24,
  workspaceFiles: 500,
  tmpBytes: 1 << 21,
  maxOpenFiles: 64,
  maxOutputBytes: 1 << 16,
};

describe('settings and token mode', () => {
  const s = (env: NodeJS.ProcessEnv) => loadSandboxSettings(env, '/tmp/x');
  it('accepts SANDBOX_ADAPTER=gvisor as kernel-isolating (no SANDBOX_ALLOW_SHARED_KERNEL needed)', () => {
    const g = s({ SANDBOX_ADAPTER: 'gvisor', SANDBOX_GVISOR_PLATFORM: 'kvm' });
    expect([g.adapter, g.runscPath, g.gvisorPlatform, isKernelIsolating(g)]).toEqual([
      'gvisor',
      '/usr/bin/runsc',
      'kvm',
      true,
    ]);
    expect(sharedKernelRefusal(g, 'token')).toBeNull();
    expect(sharedKernelRefusal(s({ SANDBOX_ADAPTER: 'namespace' }), 'token')).toMatch(/SANDBOX_ADAPTER=gvisor/);
  });
  it('refuses an unknown adapter naming every valid one', () => {
    expect(() => s({ SANDBOX_ADAPTER: 'docker' })).toThrow(/namespace, gvisor, container, fake or none/);
  });
  it('puts bridge sockets in a directory the sandbox uid can traverse (not the 0700 socket directory)', () => {
    const g = s({});
    expect(path.dirname(g.socketPath)).not.toBe(path.dirname(g.bridgeDir));
    expect(s({ SANDBOX_BRIDGE_DIR: '/srv/bridge' }).bridgeDir).toBe('/srv/bridge');
  });
});

describe('the OCI bundle', () => {
  it('no capability, no new privileges, read-only root, fresh namespaces incl. network, the seccomp list', () => {
    const c = ociConfig({
      rootfs: '/base',
      roBinds: [],
      workspace: '/ws',
      argv: ['python3', '-c', 'print(1)'],
      cwd: '.',
      vars: { PATH: '/usr/bin' },
      limits: LIMITS,
      fileBytes: LIMITS.maxFileBytes,
      cgroupsPath: 'agent-sandbox/x',
      bridgeSocket: null,
    }) as {
      process: { capabilities: Record<string, unknown[]>; noNewPrivileges: boolean; user: { uid: number } };
      root: { readonly: boolean };
      mounts: Array<{ destination: string; options?: string[] }>;
      linux: { namespaces: Array<{ type: string }>; seccomp: { syscalls: Array<{ names: string[] }> } };
    };
    expect(Object.values(c.process.capabilities).every((v) => v.length === 0)).toBe(true);
    expect([c.process.noNewPrivileges, c.root.readonly, c.process.user.uid]).toEqual([true, true, 65534]);
    expect(c.linux.namespaces.map((n) => n.type)).toContain('network');
    expect(c.linux.seccomp.syscalls[0].names).toEqual(expect.arrayContaining(['ptrace', 'mount', 'bpf', 'keyctl']));
    expect(c.mounts.find((m) => m.destination === '/workspace')?.options).toContain('rw');
    expect(c.mounts.find((m) => m.destination === '/usr')?.options).toContain('ro');
    expect(DENIED_SYSCALLS).toEqual(
      expect.arrayContaining(['perf_event_open', 'userfaultfd', 'kexec_load', 'init_module', 'unshare', 'setns']),
    );
  });
});

describe('cgroups', () => {
  it('detects what the host delegates and says which', () => {
    const cg = SandboxCgroups.detect();
    expect(['v1', 'v2', 'none']).toContain(cg.mode);
    expect(cg.detail.length).toBeGreaterThan(0);
    if (process.getuid?.() === 0 && fs.existsSync('/sys/fs/cgroup/memory')) expect(cg.mode).not.toBe('none');
  });
});

describe('the workspace walk refuses what resolves outside the workspace', () => {
  it('a directory that is a symlink to a host directory is neither listed nor read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-walk-'));
    const host = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-host-'));
    fs.writeFileSync(path.join(host, 'secret.txt'), 'host secret');
    fs.mkdirSync(path.join(dir, 'ws'));
    fs.symlinkSync(host, path.join(dir, 'ws', 'd'));
    fs.writeFileSync(path.join(dir, 'ws', 'mine.txt'), 'mine');
    try {
      expect([...(await snapshot(path.join(dir, 'ws'))).keys()]).toEqual(['mine.txt']);
      // The race's other half: a path through the swapped directory, opened directly.
      expect(() =>
        openInside(
          fs.realpathSync(path.join(dir, 'ws')),
          path.join(dir, 'ws', 'd', 'secret.txt'),
          fs.constants.O_RDONLY,
        ),
      ).toThrow(/outside the workspace/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(host, { recursive: true, force: true });
    }
  });
});

describe('the bridge endpoint', () => {
  it('refuses a socket outside the bridge directory and a malformed token', () => {
    expect(
      checkBridge({ socketPath: '/tmp/other/0123456789abcdef0123456789abcdef.sock', token: 'a'.repeat(64) }, '/b'),
    ).toMatchObject({ ok: false, code: 'bridge_refused' });
    expect(checkBridge({ socketPath: '/b/0123456789abcdef0123456789abcdef.sock', token: 'x' }, '/b')).toMatchObject({
      ok: false,
    });
    expect(
      checkBridge({ socketPath: '/b/0123456789abcdef0123456789abcdef.sock', token: 'a'.repeat(64) }, null),
    ).toMatchObject({ ok: false });
    expect(
      checkBridge({ socketPath: '/b/0123456789abcdef0123456789abcdef.sock', token: 'a'.repeat(64) }, '/b'),
    ).toEqual({ ok: true });
  });

  it("refuses another program's token and spends the budget; a request over 256 KiB closes the connection", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bridge-'));
    let invoked = 0;
    const server = new ToolBridgeServer(dir, {
      invoke: async () => {
        invoked++;
        return { ok: true, output: { n: invoked } };
      },
    });
    const grant = {
      runId: 'r',
      sessionId: 's',
      tenantId: 't',
      principalId: 'p',
      parentInvocationId: 'i',
      tools: ['math.calculate'],
      callBudget: 2,
    };
    const a = await server.open(grant);
    const b = await server.open({ ...grant, runId: 'other' });
    const rpc = async (socketPath: string, lines: string[]): Promise<Array<Record<string, unknown>>> => {
      const c = net.connect(socketPath);
      const out: Array<Record<string, unknown>> = [];
      let buf = '';
      return new Promise((resolve) => {
        c.on('data', (d) => {
          buf += d.toString();
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            out.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
            buf = buf.slice(nl + 1);
          }
          if (out.length === lines.length) c.end();
        });
        c.on('close', () => resolve(out));
        c.on('error', () => resolve(out));
        c.write(lines.join(''));
      });
    };
    const req = (id: number, token: string) =>
      `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools.call', params: { token, name: 'math.calculate', arguments: {} } })}\n`;
    try {
      const forged = await rpc(a.socketPath, [req(1, b.token)]);
      expect(forged[0].error).toMatchObject({ data: { errorCode: 'bridge_token_refused' } });
      expect(invoked).toBe(0);
      const spent = await rpc(a.socketPath, [req(1, a.token), req(2, a.token), req(3, a.token)]);
      expect(
        spent.map((r) => (r.error as { data?: { errorCode: string } } | undefined)?.data?.errorCode ?? 'ok'),
      ).toEqual(['ok', 'ok', 'bridge_budget_exhausted']);
      const huge = await rpc(a.socketPath, ['x'.repeat(300 * 1024)]);
      expect(huge[0]?.error).toMatchObject({ code: -32600 });
      expect(a.calls().map((c) => c.sequence)).toEqual([1, 2]);
    } finally {
      await a.close();
      await b.close();
      expect(fs.existsSync(a.socketPath)).toBe(false);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
