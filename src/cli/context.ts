import { loadDotEnv, loadSettings } from '../config/settings';
import { createPlatform, type Platform } from '../composition/platform';
import { EXIT, exitCodeFor } from './exit-codes';

/** Builds the platform for one CLI command, runs it, closes everything, and maps errors to exit codes. */
export async function withPlatform(service: string, fn: (p: Platform) => Promise<number>): Promise<never> {
  loadDotEnv();
  let platform: Platform | null = null;
  process.once('SIGINT', () => {
    process.stderr.write('interrupted\n');
    void (platform?.close() ?? Promise.resolve()).finally(() => process.exit(EXIT.interrupted));
  });
  let code: number;
  try {
    const settings = loadSettings();
    platform = await createPlatform(settings, {
      service,
      logger: undefined,
      quiet: process.env.AGENT_CLI_LOGS !== '1',
    });
    code = await fn(platform);
  } catch (e) {
    process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    code = exitCodeFor(e);
  }
  if (platform) await platform.close().catch(() => undefined);
  // Explicit exit: a lingering LISTEN socket must not keep the CLI alive.
  process.exit(code);
}
