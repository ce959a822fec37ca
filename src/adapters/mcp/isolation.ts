import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { gvisorLaunch, namespaceLaunch, refusedIsolatedPath, type IsolatedProcessSpec } from '../sandbox';
import { ConfigurationError } from '../../domain/errors';
import type { ChildStdioOptions } from './child-stdio-transport';
import type { McpConfig, McpServerConfig } from './mcp-config';

/**
 * What this host keeps from isolated MCP servers (ADR 0048): the platform's data directory, its
 * artifact and backup directories, the token file and `.env` (`hidden`), and where the launchers are.
 */
export interface McpIsolationHost {
  readonly hidden: readonly string[];
  readonly bwrapPath?: string;
  readonly runscPath?: string;
  /** runsc's state and the servers' OCI bundles (default: a directory of this process under the system temp dir). */
  readonly gvisorStateDir?: string;
}

export const NO_HIDDEN: McpIsolationHost = { hidden: [] };

/** Where gVisor-isolated servers' bundles go unless the host says otherwise: one directory per process. */
const DEFAULT_GVISOR_STATE = path.join(os.tmpdir(), `agent-mcp-gvisor-${process.pid}`);

/**
 * Refuses, when the servers are loaded, an isolated entry whose paths would show a hidden path (its
 * paths are, or are inside, the data directory…) and an isolation profile this host cannot run.
 */
export function checkIsolation(config: McpConfig, host: McpIsolationHost): void {
  for (const s of config.servers) {
    const iso = s.isolation;
    if (iso.profile === 'none') continue;
    const refused = refusedIsolatedPath([...iso.paths, ...iso.writablePaths], host.hidden);
    if (refused)
      throw new ConfigurationError(`mcp.yaml: server ${s.id}: field paths: ${refused}`, {
        server: s.id,
        field: 'paths',
      });
    const unavailable = isolationUnavailable(s, host);
    if (unavailable)
      throw new ConfigurationError(`mcp.yaml: server ${s.id}: field isolation: ${unavailable}`, {
        server: s.id,
        field: 'isolation',
      });
  }
}

/** Why the server's isolation profile cannot run here (one line), or null. */
export function isolationUnavailable(s: McpServerConfig, host: McpIsolationHost): string | null {
  if (s.isolation.profile === 'namespace') {
    const bwrap = host.bwrapPath ?? '/usr/bin/bwrap';
    return executable(bwrap)
      ? null
      : `namespace needs bubblewrap at ${bwrap} (apt-get install -y bubblewrap); the server is not started`;
  }
  if (s.isolation.profile === 'gvisor') {
    const runsc = host.runscPath ?? '/usr/bin/runsc';
    return executable(runsc)
      ? null
      : `gvisor needs runsc at ${runsc} (apt-get install -y runsc; or use namespace); the server is not started`;
  }
  return null;
}

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * How the supervisor spawns a stdio server: the command itself (`none`), or the launcher that
 * isolates it with `env` as its whole environment.
 */
export function stdioLaunch(
  s: McpServerConfig,
  env: Readonly<Record<string, string>>,
  host: McpIsolationHost,
): ChildStdioOptions {
  const iso = s.isolation;
  if (iso.profile === 'none') return { command: s.command, args: s.args, cwd: s.cwd ?? undefined, env };
  const unavailable = isolationUnavailable(s, host);
  if (unavailable) throw new Error(`isolation ${unavailable}`);
  const spec: IsolatedProcessSpec = {
    command: s.command,
    args: s.args,
    cwd: s.cwd,
    env,
    paths: iso.paths,
    writablePaths: iso.writablePaths,
    network: iso.network,
    hidden: host.hidden,
    hostname: `mcp-${s.id.replace(/_/g, '-')}`,
  };
  if (iso.profile === 'gvisor') {
    const launch = gvisorLaunch(spec, {
      runscPath: host.runscPath ?? '/usr/bin/runsc',
      stateDir: host.gvisorStateDir ?? DEFAULT_GVISOR_STATE,
    });
    return { command: launch.file, args: launch.args, env: {}, cleanup: launch.cleanup };
  }
  const launch = namespaceLaunch(spec, host.bwrapPath);
  return { command: launch.file, args: launch.args, env: {}, uid: launch.uid, gid: launch.gid };
}
