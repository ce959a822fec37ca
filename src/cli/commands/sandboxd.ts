import type { Command } from 'commander';
import { runExecutionService } from '../../composition/sandbox-service';
import { EXIT, exitCodeFor } from '../exit-codes';

/** `agent sandboxd`: the execution service (started by `agent start`; docs/sandbox.md). */
export function registerSandboxCommands(program: Command): void {
  program
    .command('sandboxd')
    .description('run the execution service that owns sandboxes (started by `agent start`; see docs/sandbox.md)')
    .action(() =>
      runExecutionService().then(
        (code) => process.exit(code),
        (e: unknown) => {
          process.stderr.write(`error: sandboxd: ${e instanceof Error ? e.message : String(e)}\n`);
          process.exit(e instanceof Error && 'code' in e ? exitCodeFor(e) : EXIT.unavailable);
        },
      ),
    );
}
