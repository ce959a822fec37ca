import type { Command } from 'commander';
import { runSandboxd } from '../sandboxd-main';

/**
 * `agent sandboxd`: the execution service (started by `agent start`; docs/sandbox.md). A bare
 * `agent sandboxd` never gets here: src/main.ts runs it without loading the CLI (see sandboxd-main.ts);
 * this registration gives it its place in `agent --help`.
 */
export function registerSandboxCommands(program: Command): void {
  program
    .command('sandboxd')
    .description('run the execution service that owns sandboxes (started by `agent start`; see docs/sandbox.md)')
    .action(() => runSandboxd());
}
