import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SandboxClient, spawnSandboxd, waitForSocket } from '../adapters/sandbox';
import { FakeExecutionEnvironment } from '../adapters/sandbox/fake-environment';
import { loadSandboxSettings, type SandboxSettings } from '../config/sandbox-settings';
import type { Settings } from '../config/settings';
import type { ArtifactStore } from '../ports/artifact-store';
import type { ExecutionEnvironment } from '../ports/execution-environment';
import type { Logger } from '../ports/logger';
import type { Tool } from '../ports/tool';
import { ToolBridgeServer } from '../adapters/sandbox/tool-bridge-server';
import type { ToolRegistry } from '../tools/registry';
import { bridgeCallable, OUTSIDE_A_RUN } from '../tools/sandbox/bridge-invoker';
import { createRunCommandTool } from '../tools/sandbox/run-command';
import { createRunProgramTool } from '../tools/sandbox/run-program';
import { sessionWorkspaceAccess } from '../tools/sandbox/session-workspace';
import { sandboxStatus, type SandboxStatus } from './prerequisites';

export interface SandboxWiring {
  readonly settings: SandboxSettings;
  /** Disabled, unavailable (a missing program, with its fix) or available, as checked at wiring. */
  readonly status: SandboxStatus;
  /** The worker's ExecutionEnvironment: a client of `agent sandboxd` (or the in-process fake). */
  readonly execution: ExecutionEnvironment | null;
  readonly tool: Tool;
  /**
   * `sandbox.run_program` (plan §8.5) over the same execution service, its bridge reaching the
   * registry's bridge-callable tools that the run's agent enables; each bridged call goes through
   * the run's tool pipeline (`ToolExecutionContext.callTool`, docs/sandbox.md "The tool bridge").
   */
  runProgramTool(registry: ToolRegistry): Tool;
  close(): Promise<void>;
}

/**
 * Binds `sandbox.run_command` to the execution service (ADR 0018). The worker only ever holds a
 * socket client; with SANDBOX_ADAPTER=fake nothing executes and the fake runs in-process. When no
 * service listens and SANDBOX_AUTOSTART is on, a CLI or eval process starts its own `agent sandboxd`
 * (scrubbed environment) on first use and stops it on close; `agent start` runs one for everybody.
 */
export function wireSandbox(
  settings: Settings,
  opts: { artifacts?: ArtifactStore; log: Logger; env?: NodeJS.ProcessEnv },
): SandboxWiring {
  const env = opts.env ?? process.env;
  const sandbox = loadSandboxSettings(env, settings.dataDir);
  // A missing bubblewrap (or engine) leaves the tool answering why, with the fix, instead of every
  // command failing on a socket nobody listens on (docs/adr/0028-first-ten-minutes.md).
  const status = sandboxStatus(sandbox, settings.authMode, env);
  let child: ChildProcess | null = null;
  let execution: ExecutionEnvironment | null = null;
  if (status.state === 'available' && sandbox.adapter === 'fake')
    execution = new FakeExecutionEnvironment(sandbox.envAllowlist);
  else if (status.state === 'available') {
    const entry = path.join(__dirname, '..', 'main.js'); // dist/src/main.js
    execution = new SandboxClient({
      socketPath: sandbox.socketPath,
      ensureService:
        sandbox.autostart && fs.existsSync(entry)
          ? async () => {
              opts.log.info('no execution service listening; starting agent sandboxd', { socket: sandbox.socketPath });
              child = spawnSandboxd(entry, env, 'ignore');
              child.once('exit', () => (child = null));
              await waitForSocket(sandbox.socketPath, 60_000, child);
            }
          : undefined,
    });
  }
  const unavailableReason =
    status.state === 'disabled'
      ? status.reason
      : status.state === 'unavailable'
        ? `${status.reason}. Fix: ${status.fix}`
        : undefined;
  const tool = createRunCommandTool({
    execution,
    unavailableReason,
    workspace: sessionWorkspaceAccess(path.join(settings.dataDir, 'workspaces')),
    artifacts: opts.artifacts,
    limits: sandbox.limits,
    operatorCeilingSeconds: sandbox.timeoutCeilingSeconds,
    envAllowlist: sandbox.envAllowlist,
  });
  return {
    settings: sandbox,
    status,
    execution,
    tool,
    runProgramTool: (registry) =>
      createRunProgramTool({
        execution,
        unavailableReason,
        workspace: sessionWorkspaceAccess(path.join(settings.dataDir, 'workspaces')),
        artifacts: opts.artifacts,
        limits: sandbox.limits,
        operatorCeilingSeconds: sandbox.timeoutCeilingSeconds,
        bridge: new ToolBridgeServer(sandbox.bridgeDir, OUTSIDE_A_RUN),
        bridgedTools: (ctx) => bridgeCallable(registry, ctx.agent?.enabledTools ?? [], ctx.agent?.bridgeTools ?? []),
      }),
    async close() {
      if (execution instanceof SandboxClient) execution.close();
      const c = child;
      if (!c) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGTERM');
        setTimeout(() => c.kill('SIGKILL'), 5000).unref();
      });
    },
  };
}
