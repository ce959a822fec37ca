#!/usr/bin/env node
import { main } from './cli/main';

/** Entry point of `npm start` (`agent start`) and of the `agent` command. */
main(process.argv).catch((e: unknown) => {
  process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(5);
});
