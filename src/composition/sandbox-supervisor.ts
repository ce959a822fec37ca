import type { ChildProcess } from 'node:child_process';
import { spawnSandboxd, waitForSocket } from '../adapters/sandbox';
import { loadSandboxSettings, sharedKernelRefusal } from '../config/sandbox-settings';
import type { Settings } from '../config/settings';
import type { Logger } from '../ports/logger';

export interface SupervisedSandbox {
  /** Resolves once the service listens, or after 60 s with a message on stderr (never rejects). */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * `agent start` runs the execution service beside the API and the worker: launched with a scrubbed
 * environment, restarted with backoff when it dies, stopped on shutdown. In AUTH_MODE=token with a
 * shared-kernel adapter and no SANDBOX_ALLOW_SHARED_KERNEL=1 it is not started, and says why
 * (`sandbox.run_command` then answers `sandbox_unavailable` with the same reason).
 */
export function startSandboxService(
  settings: Settings,
  entry: string,
  log: Logger,
  stopping: () => boolean,
): SupervisedSandbox | null {
  const sandbox = loadSandboxSettings(process.env, settings.dataDir);
  if (sandbox.adapter === 'none' || sandbox.adapter === 'fake') return null;
  const refusal = sharedKernelRefusal(sandbox, settings.authMode);
  if (refusal) {
    process.stderr.write(`agent-core: ${refusal}\n`);
    log.warn('execution service not started', { reason: refusal });
    return null;
  }
  let child: ChildProcess | null = null;
  const launch = (restarts: number): void => {
    const c = spawnSandboxd(entry, process.env);
    child = c;
    c.once('exit', (code, signal) => {
      child = null;
      if (stopping()) return;
      const delay = Math.min(10_000, 500 * 2 ** restarts);
      log.error('sandboxd exited unexpectedly; restarting', { code, signal, delayMs: delay });
      setTimeout(() => launch(restarts + 1), delay);
    });
  };
  launch(0);
  const ready = waitForSocket(sandbox.socketPath, 60_000).catch((e: unknown) => {
    process.stderr.write(
      `agent-core: the execution service did not start (${e instanceof Error ? e.message : String(e)}); sandbox.run_command will report it unavailable\n`,
    );
  });
  return {
    ready,
    async stop() {
      const c = child;
      if (!c) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGTERM');
        setTimeout(() => c.kill('SIGKILL'), 10_000).unref();
      });
    },
  };
}
