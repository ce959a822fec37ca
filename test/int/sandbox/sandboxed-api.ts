import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { NamespaceExecutionEnvironment } from '../../../src/adapters/sandbox/namespace-environment';
import { SandboxService } from '../../../src/adapters/sandbox/sandbox-service';
import type { Settings } from '../../../src/config/settings';
import { DEFAULT_ENV_ALLOWLIST } from '../../../src/domain/sandbox/request-checks';
import { createTestDb, type TestDb } from '../../support/test-db';
import { startApi, type ApiHarness } from '../api/api-harness';

/** Whether this host can run the namespace sandbox with Python programs. */
export const SANDBOX_RUNNABLE = fs.existsSync('/usr/bin/bwrap') && fs.existsSync('/usr/bin/python3');

/** A real API with an in-process worker whose tools reach a bubblewrap sandboxd and its tool bridge. */
export interface SandboxedApi {
  readonly h: ApiHarness;
  readonly dir: string;
  close(): Promise<void>;
}

const SANDBOX_ENV = ['SANDBOX_SOCKET', 'SANDBOX_ADAPTER', 'SANDBOX_BRIDGE_DIR'] as const;

/**
 * Starts a namespace sandboxd in a fresh temporary directory, points this process's sandbox
 * settings at it, and starts the API over a fresh database. `settings` may add to the API's settings
 * (it gets the directory, e.g. to write a config directory there).
 */
export async function startSandboxedApi(
  prefix: string,
  settings: (dir: string) => Partial<Settings> = () => ({}),
): Promise<SandboxedApi> {
  const saved = SANDBOX_ENV.map((k) => [k, process.env[k]] as const);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  const socketPath = path.join(dir, 'run', 'sandboxd.sock');
  const bridgeDir = path.join(dir, 'bridge');
  const service = new SandboxService({
    socketPath,
    adapter: new NamespaceExecutionEnvironment({
      root: path.join(dir, 'sandboxes'),
      envAllowlist: DEFAULT_ENV_ALLOWLIST,
      bridgeDir,
    }),
    log: silentLogger,
  });
  await service.start();
  process.env.SANDBOX_SOCKET = socketPath;
  process.env.SANDBOX_ADAPTER = 'namespace';
  process.env.SANDBOX_BRIDGE_DIR = bridgeDir;
  const tdb: TestDb = await createTestDb();
  const h = await startApi(tdb.url, { dataDir: dir, ...settings(dir) }, { worker: true });
  return {
    h,
    dir,
    async close() {
      await h.close();
      await tdb.drop();
      await service.stop();
      for (const [k, v] of saved)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
