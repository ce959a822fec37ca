import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { looksLikeCredentialName } from '../../domain/sandbox/request-checks';
import { ContainerExecutionEnvironment } from './container-environment';
import { FakeExecutionEnvironment } from './fake-environment';
import { GvisorExecutionEnvironment } from './gvisor-environment';
import { NamespaceExecutionEnvironment } from './namespace-environment';
export type { ServiceAdapter } from './sandbox-service';

export { PROBE_LIMITS } from './probe-limits';
export { gvisorLaunch, namespaceLaunch, refusedIsolatedPath } from './isolated-process';
export type { IsolatedLaunch, IsolatedProcessSpec, GvisorLaunchOptions } from './isolated-process';
export { SandboxClient } from './sandbox-client';
export { SandboxService } from './sandbox-service';
export {
  NamespaceExecutionEnvironment,
  FakeExecutionEnvironment,
  ContainerExecutionEnvironment,
  GvisorExecutionEnvironment,
};

/** Variables the execution service may inherit; everything else (DATABASE_URL, keys, tokens) is dropped. */
const SERVICE_ENV =
  /^(PATH|HOME|LANG|LC_ALL|TZ|TMPDIR|NODE_ENV|LOG_LEVEL|AUTH_MODE|AGENT_DATA_DIR|SANDBOX_[A-Z0-9_]+)$/;

/**
 * The scrubbed environment `agent sandboxd` is launched with (plan §22, §28.3): only the names
 * above, and never one that looks like a credential even if it matches.
 */
export function scrubbedServiceEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || !SERVICE_ENV.test(k)) continue;
    if (looksLikeCredentialName(k) && !/^(AUTH_MODE|AGENT_DATA_DIR|SANDBOX_[A-Z0-9_]+)$/.test(k)) continue;
    out[k] = v;
  }
  return out;
}

/** Resolves when something accepts connections on `socketPath` (or rejects after `timeoutMs`). */
export async function waitForSocket(socketPath: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`agent sandboxd exited with code ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      if (!fs.existsSync(socketPath)) return resolve(false);
      const c = net.connect(socketPath);
      c.once('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`agent sandboxd did not listen on ${socketPath} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Spawns `agent sandboxd` with a scrubbed environment. `entry` is dist/src/main.js. */
export function spawnSandboxd(
  entry: string,
  env: NodeJS.ProcessEnv,
  stdio: 'inherit' | 'ignore' = 'inherit',
): ChildProcess {
  return spawn(process.execPath, [entry, 'sandboxd'], { stdio, env: scrubbedServiceEnv(env) });
}
