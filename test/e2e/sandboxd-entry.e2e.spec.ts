import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ENTRY, ensureBuilt } from '../support/processes';

/**
 * `agent sandboxd` forks a sandbox for every command, and a fork's cost grows with the forking
 * process's memory, so the entry point runs it without loading the rest of the CLI (the HTTP
 * framework, the ORM, the telemetry SDK). This runs the real entry point as `agent start` does and
 * lists the modules it loaded before exiting (it exits at once here: SANDBOX_ADAPTER=none).
 */
function modulesLoadedBy(args: string[]): { loaded: string[]; status: number | null; stderr: string } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxd-entry-'));
  try {
    const out = path.join(dataDir, 'modules.json');
    const probe = `process.argv = [process.argv[0], ${JSON.stringify(ENTRY)}, ...${JSON.stringify(args)}];
process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(require.cache))));
require(${JSON.stringify(ENTRY)});`;
    const r = spawnSync(process.execPath, ['-e', probe], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', AGENT_DATA_DIR: dataDir, SANDBOX_ADAPTER: 'none' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { loaded: JSON.parse(fs.readFileSync(out, 'utf8')) as string[], status: r.status, stderr: r.stderr };
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('agent sandboxd entry point', () => {
  beforeAll(() => ensureBuilt());

  it('loads only the execution service’s modules, not the CLI, the HTTP framework, the ORM or the telemetry SDK', () => {
    const r = modulesLoadedBy(['sandboxd']);
    expect(r.stderr).toContain('SANDBOX_ADAPTER=none');
    expect(r.status).toBe(5);
    const heavy = r.loaded.filter((m) => /[\\/](@nestjs|typeorm|@opentelemetry[\\/]sdk|commander)[\\/]/.test(m));
    expect(heavy).toEqual([]);
    expect(r.loaded.some((m) => m.endsWith(path.join('cli', 'main.js')))).toBe(false);
    expect(r.loaded.some((m) => m.endsWith(path.join('composition', 'sandbox-service.js')))).toBe(true);
  });

  it('every other command still goes through the CLI', () => {
    const r = modulesLoadedBy(['sandboxd', '--help']);
    expect(r.loaded.some((m) => m.endsWith(path.join('cli', 'main.js')))).toBe(true);
  });
});
