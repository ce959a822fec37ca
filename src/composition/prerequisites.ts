import * as fs from 'node:fs';
import * as path from 'node:path';
import { sharedKernelRefusal, type SandboxSettings } from '../config/sandbox-settings';

/**
 * Optional host programs, checked before anything depends on them (docs/adr/0028-first-ten-minutes.md).
 * A missing optional piece is reported once, with the command that fixes it, and the rest of the
 * platform runs without it; it is never a crash or a restart loop.
 */
export interface Missing {
  /** What is missing and what that leaves out, in one sentence. */
  readonly reason: string;
  /** The exact command (or setting) that fixes it. */
  readonly fix: string;
}

/** How the sandbox stands on this host, as `/health/ready`, `agent doctor` and the worker see it. */
export type SandboxStatus =
  | { readonly state: 'available'; readonly adapter: string }
  | { readonly state: 'disabled'; readonly reason: string }
  | ({ readonly state: 'unavailable' } & Missing);

/** Whether `file` exists and is executable by this process. */
export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The first executable named `name` on PATH (or `name` itself when it has a slash), else null. */
export function whichSync(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  if (name.includes('/')) return isExecutable(name) ? name : null;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/** Which Debian package provides each of the namespace adapter's programs. */
const PACKAGE_OF = { bwrap: 'bubblewrap', unshare: 'util-linux', prlimit: 'util-linux' } as const;

/** The namespace adapter's missing programs, with the one install command that brings them all. */
export function missingNamespacePrograms(s: SandboxSettings): Missing | null {
  const missing = (Object.keys(PACKAGE_OF) as (keyof typeof PACKAGE_OF)[]).filter((k) => !isExecutable(s.programs[k]));
  if (missing.length === 0) return null;
  const packages = [...new Set(missing.map((k) => PACKAGE_OF[k]))];
  return {
    reason: `command execution is unavailable: ${missing.map((k) => s.programs[k]).join(', ')} not found (the namespace sandbox needs bubblewrap and util-linux ≥ 2.38)`,
    fix: `apt-get install -y ${packages.join(' ')}`,
  };
}

/**
 * Whether `sandbox.run_command` can run here: disabled by configuration (SANDBOX_ADAPTER=none or the
 * AUTH_MODE=token shared-kernel refusal), unavailable because a program is missing, or available.
 * Only cheap file checks: it runs in every process that wires the tool, and on every readiness probe.
 */
export function sandboxStatus(
  s: SandboxSettings,
  authMode: string,
  env: NodeJS.ProcessEnv = process.env,
): SandboxStatus {
  if (s.adapter === 'none') return { state: 'disabled', reason: 'the sandbox is disabled (SANDBOX_ADAPTER=none)' };
  const refusal = sharedKernelRefusal(s, authMode);
  if (refusal) return { state: 'disabled', reason: refusal };
  if (s.adapter === 'namespace') {
    if (process.platform !== 'linux')
      return {
        state: 'unavailable',
        reason: 'command execution is unavailable: the namespace sandbox runs only on Linux',
        fix: 'SANDBOX_ADAPTER=container (docker or podman)',
      };
    const missing = missingNamespacePrograms(s);
    if (missing) return { state: 'unavailable', ...missing };
  }
  if (s.adapter === 'container' && !whichSync(s.containerEngine, env))
    return {
      state: 'unavailable',
      reason: `command execution is unavailable: ${s.containerEngine} is not on PATH (SANDBOX_ADAPTER=container)`,
      fix: `install ${s.containerEngine}, or SANDBOX_ADAPTER=namespace with apt-get install -y bubblewrap`,
    };
  if (s.adapter === 'gvisor' && !isExecutable(s.runscPath))
    return {
      state: 'unavailable',
      reason: `command execution is unavailable: ${s.runscPath} not found (SANDBOX_ADAPTER=gvisor needs gVisor's runsc)`,
      fix: 'apt-get install -y runsc, or SANDBOX_RUNSC_PATH=/path/to/runsc',
    };
  return { state: 'available', adapter: s.adapter };
}

/** The one warning line for a missing optional piece: what is left out, and the fix. */
export function warningLine(m: Missing): string {
  return `agent-core: warning: ${m.reason}; everything else runs. Fix: ${m.fix}`;
}
