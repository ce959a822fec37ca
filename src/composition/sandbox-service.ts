import { spawn } from 'node:child_process';
import { createLogger } from '../adapters/logging/pino-logger';
import {
  ContainerExecutionEnvironment,
  GvisorExecutionEnvironment,
  NamespaceExecutionEnvironment,
  SandboxService,
  scrubbedServiceEnv,
} from '../adapters/sandbox';
import { loadSandboxSettings, sharedKernelRefusal } from '../config/sandbox-settings';
import { loadSettings } from '../config/settings';
import { ConfigurationError } from '../domain/errors';
import { createServiceAdapter } from './service-adapter';

/**
 * The body of `agent sandboxd` (plan §28.3, docs/sandbox.md). It never reads `.env`; when started
 * with any variable outside its allowlist (by hand, with DATABASE_URL or a key exported) it runs
 * itself again as a child with only the allowed ones; it refuses a shared-kernel adapter in
 * AUTH_MODE=token without SANDBOX_ALLOW_SHARED_KERNEL=1, checks that the adapter works, and serves
 * the ExecutionEnvironment port on a unix socket until SIGTERM/SIGINT.
 * @returns the exit code
 */
export async function runExecutionService(): Promise<number> {
  const keep = scrubbedServiceEnv(process.env);
  if (Object.keys(process.env).some((k) => !(k in keep))) return reexecScrubbed(keep);
  const settings = loadSettings(process.env);
  const sandbox = loadSandboxSettings(process.env, settings.dataDir);
  const refusal = sharedKernelRefusal(sandbox, settings.authMode);
  if (refusal) throw new ConfigurationError(refusal);
  if (sandbox.adapter === 'none')
    throw new ConfigurationError('SANDBOX_ADAPTER=none: there is no execution service to run');
  const log = createLogger({ level: settings.logLevel, service: 'sandboxd' });
  const adapter = createServiceAdapter(sandbox);
  if (adapter instanceof NamespaceExecutionEnvironment) {
    await adapter.selfCheck();
    // A limit that falls back (no delegated cgroup, no tmpfs quota) is a warning, not a refusal.
    for (const w of adapter.limitsReport().warnings) log.warn(`sandbox limits: ${w}`);
  }
  if (adapter instanceof GvisorExecutionEnvironment) await adapter.selfCheck();
  if (adapter instanceof ContainerExecutionEnvironment) await adapter.reachable();
  const service = new SandboxService({ socketPath: sandbox.socketPath, adapter, log });
  await service.start();
  process.stderr.write(`agent-core sandboxd (${adapter.name}) listening on ${sandbox.socketPath}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await service.stop();
  return 0;
}

function reexecScrubbed(env: Record<string, string>): Promise<number> {
  const child = spawn(process.execPath, process.argv.slice(1), { env, stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => child.kill(sig));
  return new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 5)));
}
