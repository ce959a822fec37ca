import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { GvisorExecutionEnvironment } from '../../../src/adapters/sandbox/gvisor-environment';
import { NamespaceExecutionEnvironment } from '../../../src/adapters/sandbox/namespace-environment';
import { SandboxClient } from '../../../src/adapters/sandbox/sandbox-client';
import { SandboxService, type ServiceAdapter } from '../../../src/adapters/sandbox/sandbox-service';
import { ToolBridgeServer } from '../../../src/adapters/sandbox/tool-bridge-server';
import { systemClock } from '../../../src/adapters/system-clock';
import { DEFAULT_ENV_ALLOWLIST } from '../../../src/domain/sandbox/request-checks';
import { PolicyEngine } from '../../../src/policy/policy-engine';
import type { ResourceLimits } from '../../../src/ports/execution-environment';
import type { ToolExecutionContext } from '../../../src/ports/tool';
import { createBuiltinTools } from '../../../src/tools/builtin';
import { ToolRegistry } from '../../../src/tools/registry';
import { bridgeCallable, RegistryBridgeInvoker } from '../../../src/tools/sandbox/bridge-invoker';
import { createRunProgramTool, MAX_PROGRAM_CHARS } from '../../../src/tools/sandbox/run-program';
import { sessionWorkspaceAccess } from '../../../src/tools/sandbox/session-workspace';
import { createWorkspaceTools } from '../../../src/tools/workspace/workspace-tools';

/**
 * Issue 28, plan §8.5: `sandbox.run_program` runs model-written code whose only way out is the tool
 * bridge, on both real adapters. The demo ("sum the squares of 1 to 100 and tell me the time in
 * Tokyo") is one program making two bridged calls; a forged token, a tool outside the program's
 * set and invalid arguments are refused; bad input never reaches a sandbox.
 */
const LIMITS: ResourceLimits = {
  wallClockSeconds: 30,
  cpuSeconds: 10,
  memoryBytes: 512 * 1024 * 1024,
  maxProcesses: 32,
  maxFileBytes: 4 * 1024 * 1024,
  workspaceBytes: 16 * 1024 * 1024,
  workspaceFiles: 500,
  tmpBytes: 2 * 1024 * 1024,
  maxOpenFiles: 64,
  maxOutputBytes: 64 * 1024,
};
const ADAPTERS: Array<[string, boolean, (root: string, bridgeDir: string) => ServiceAdapter]> = [
  [
    'namespace',
    fs.existsSync('/usr/bin/bwrap'),
    (root, bridgeDir) => new NamespaceExecutionEnvironment({ root, envAllowlist: DEFAULT_ENV_ALLOWLIST, bridgeDir }),
  ],
  [
    'gvisor',
    fs.existsSync('/usr/bin/runsc'),
    (root, bridgeDir) => new GvisorExecutionEnvironment({ root, envAllowlist: DEFAULT_ENV_ALLOWLIST, bridgeDir }),
  ],
];

describe.each(ADAPTERS)('sandbox.run_program on %s', (_name, available, make) => {
  const d = available ? describe : describe.skip;
  let dir: string;
  let service: SandboxService;
  let client: SandboxClient;
  let tool: ReturnType<typeof createRunProgramTool>;
  const ctx = (): ToolExecutionContext => ({
    runId: 'run-1',
    sessionId: 'session-1',
    tenantId: 'tenant-1',
    principalId: 'p-1',
    invocationId: `inv-${Math.random().toString(16).slice(2)}`,
    idempotencyKey: 'k',
    clock: systemClock,
    signal: new AbortController().signal,
  });
  const call = async (language: string, code: string) => {
    const args = { language, code };
    const n = tool.normalize!(args);
    if (!n.ok) return { ok: false as const, errorCode: n.errorCode, message: n.message, retryable: false };
    return tool.execute(n.value, ctx());
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-bridge-'));
    fs.chmodSync(dir, 0o755);
    const bridgeDir = path.join(dir, 'bridge');
    const registry = new ToolRegistry();
    for (const t of createBuiltinTools()) registry.register(t);
    for (const t of createWorkspaceTools({ root: path.join(dir, 'workspaces') })) registry.register(t);
    const policy = PolicyEngine.load(path.join(__dirname, '..', '..', '..', 'config', 'policies'));
    const socketPath = path.join(dir, 'run', 'sandboxd.sock');
    service = new SandboxService({
      socketPath,
      adapter: make(path.join(dir, 'sandboxes'), bridgeDir),
      log: silentLogger,
    });
    if (available) await service.start();
    client = new SandboxClient({ socketPath });
    tool = createRunProgramTool({
      execution: client,
      workspace: sessionWorkspaceAccess(path.join(dir, 'workspaces')),
      limits: LIMITS,
      operatorCeilingSeconds: 60,
      bridge: new ToolBridgeServer(bridgeDir, new RegistryBridgeInvoker(registry, policy, systemClock)),
      bridgedTools: () =>
        bridgeCallable(
          registry,
          registry.list().map((t) => t.spec.name),
        ),
    });
  }, 60_000);
  afterAll(async () => {
    client.close();
    if (available) await service.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  d('the bridge', () => {
    it('the demo: one Python program makes two bridged calls (math.calculate, system.current_time)', async () => {
      const r = await call(
        'python',
        [
          'from agent_tools import call, tools',
          'print(sorted(tools()))',
          'expr = "+".join("%d^2" % i for i in range(1, 101))',
          'print(call("math.calculate", {"expression": expr}))',
          'print(call("system.current_time", {"timezone": "Asia/Tokyo"}))',
        ].join('\n'),
      );
      expect(JSON.stringify(r)).toContain('"ok":true');
      const out = (r as { output: Record<string, unknown> }).output;
      if (out.exit_code !== 0) process.stderr.write(JSON.stringify(out) + '\n');
      expect(out.exit_code).toBe(0);
      expect(out.stdout).toContain("['math.calculate', 'system.current_time']");
      expect(out.stdout).toContain('338350');
      expect(out.stdout).toContain('Asia/Tokyo');
      expect((out.bridge_calls as Array<{ toolName: string; ok: boolean }>).map((c) => [c.toolName, c.ok])).toEqual([
        ['math.calculate', true],
        ['system.current_time', true],
      ]);
    }, 60_000);

    it('the same from JavaScript', async () => {
      const r = await call(
        'javascript',
        [
          "const { call } = require('agent_tools');",
          '(async () => {',
          "  const expr = Array.from({ length: 100 }, (_, i) => `${i + 1}^2`).join('+');",
          "  console.log(JSON.stringify(await call('math.calculate', { expression: expr })));",
          '})();',
        ].join('\n'),
      );
      const out = (r as { output: Record<string, unknown> }).output;
      expect([out.exit_code, (out.bridge_calls as unknown[]).length]).toEqual([0, 1]);
      expect(out.stdout).toContain('338350');
    }, 60_000);

    it('a forged token, a tool outside the set and invalid arguments are refused; nothing runs for them', async () => {
      const r = await call(
        'python',
        [
          'import os, agent_tools',
          'from agent_tools import call, ToolError',
          'def attempt(f):',
          '  try: f(); print("ran")',
          '  except ToolError as e: print(e.code)',
          'attempt(lambda: call("workspace.write_file", {"path": "x", "content": "y"}))',
          'attempt(lambda: call("math.calculate", {"expression": 42}))',
          'os.environ["AGENT_BRIDGE_TOKEN"] = "0" * 64',
          'attempt(lambda: call("math.calculate", {"expression": "1+1"}))',
        ].join('\n'),
      );
      const out = (r as { output: Record<string, unknown> }).output;
      expect(String(out.stdout).trim().split('\n')).toEqual([
        'tool_not_bridged',
        'tool_validation_error',
        'bridge_token_refused',
      ]);
      // Only the call that reached the invoker is recorded (and it failed validation).
      expect(out.bridge_calls).toEqual([expect.objectContaining({ toolName: 'math.calculate', ok: false })]);
    }, 60_000);

    it('bad input is refused before any sandbox: an unknown language, an oversized program', async () => {
      expect(await call('ruby', 'puts 1')).toMatchObject({ ok: false, errorCode: 'language_not_offered' });
      expect(await call('python', 'x'.repeat(MAX_PROGRAM_CHARS + 1))).toMatchObject({
        ok: false,
        errorCode: 'program_too_large',
      });
    });
  });
});
