import type { ChildProcess } from 'node:child_process';
import { spawnSandboxd, waitForSocket } from '../adapters/sandbox';
import { loadSandboxSettings } from '../config/sandbox-settings';
import type { Settings } from '../config/settings';
import type { Logger } from '../ports/logger';
import { sandboxStatus, warningLine } from './prerequisites';

export interface SupervisedSandbox {
  /** Resolves once the service listens, once it cannot run here, or after 60 s (never rejects). */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Exit codes of `agent sandboxd` that say it cannot run on this host or with this configuration
 * (2 bad configuration, 5 unavailable: a failed self-check, a missing program). Restarting would
 * fail the same way forever, so these are reported once and the service stays down; any other
 * exit (a signal, an uncaught error) is a crash and is restarted with backoff.
 */
const CANNOT_RUN_HERE = new Set([2, 5]);

/**
 * `agent start` runs the execution service beside the API and the worker: launched with a scrubbed
 * environment, restarted with backoff when it crashes, stopped on shutdown. It is not started when
 * the sandbox is disabled (SANDBOX_ADAPTER=none, or AUTH_MODE=token with a shared-kernel adapter and
 * no SANDBOX_ALLOW_SHARED_KERNEL=1) or cannot run here (bubblewrap missing, ...): one warning with
 * the fix, and `sandbox.run_command` answers `sandbox_unavailable` with the same reason.
 */
export function startSandboxService(
  settings: Settings,
  entry: string,
  log: Logger,
  stopping: () => boolean,
): SupervisedSandbox | null {
  const sandbox = loadSandboxSettings(process.env, settings.dataDir);
  if (sandbox.adapter === 'none' || sandbox.adapter === 'fake') return null;
  const status = sandboxStatus(sandbox, settings.authMode);
  if (status.state === 'disabled') {
    process.stderr.write(`agent-core: ${status.reason}\n`);
    log.warn('execution service not started', { reason: status.reason });
    return null;
  }
  if (status.state === 'unavailable') {
    process.stderr.write(`${warningLine(status)}\n`);
    log.warn('execution service not started', { reason: status.reason, fix: status.fix });
    return null;
  }
  let child: ChildProcess | null = null;
  let given = false;
  let resolveGaveUp: () => void = () => undefined;
  const stoppedForGood = new Promise<void>((resolve) => (resolveGaveUp = resolve));
  const gaveUp = () => {
    given = true;
    resolveGaveUp();
  };
  const launch = (restarts: number): void => {
    const c = spawnSandboxd(entry, process.env);
    child = c;
    c.once('exit', (code, signal) => {
      child = null;
      if (stopping()) return;
      if (signal === null && code !== null && CANNOT_RUN_HERE.has(code)) {
        const reason = `agent sandboxd cannot run here (exit ${code}; its error is above)`;
        process.stderr.write(
          `agent-core: warning: command execution is unavailable: ${reason}; everything else runs. Check: agent doctor\n`,
        );
        log.warn('execution service not restarted', { code, reason });
        gaveUp();
        return;
      }
      const delay = Math.min(10_000, 500 * 2 ** restarts);
      log.error('sandboxd crashed; restarting', { code, signal, delayMs: delay });
      setTimeout(() => launch(restarts + 1), delay);
    });
  };
  launch(0);
  const listening = waitForSocket(sandbox.socketPath, 60_000).catch((e: unknown) => {
    if (given || stopping()) return; // already said why, once
    process.stderr.write(
      `agent-core: the execution service did not start (${e instanceof Error ? e.message : String(e)}); sandbox.run_command will report it unavailable\n`,
    );
  });
  return {
    ready: Promise.race([listening, stoppedForGood]),
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
