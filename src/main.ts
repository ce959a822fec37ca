#!/usr/bin/env node

/**
 * Entry point of `npm start` (`agent start`) and of the `agent` command. A bare `agent sandboxd` (how
 * `agent start`, the worker and the CLI start the execution service) loads only the service's modules
 * (src/cli/sandboxd-main.ts says why); everything else goes through the CLI.
 */
if (process.argv[2] === 'sandboxd' && process.argv.length === 3) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('./cli/sandboxd-main') as typeof import('./cli/sandboxd-main')).runSandboxd();
} else {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { main } = require('./cli/main') as typeof import('./cli/main');
  main(process.argv).catch((e: unknown) => {
    process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(5);
  });
}
