import * as path from 'node:path';
import type { Command } from 'commander';
import { projectRoot } from '../../config/project-root';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { promoteTrajectory } from '../eval/promote';
import { EXIT, exitCodeFor } from '../exit-codes';

interface PromoteOpts {
  run: string;
  name?: string;
  casesDir?: string;
  fixturesDir?: string;
}

/** `agent eval promote <export-file> --run ID`: an exported trajectory becomes a deterministic eval case. */
export function registerPromoteCommand(evalCommand: Command): void {
  evalCommand
    .command('promote <export-file>')
    .description('turn an exported trajectory into an eval case (source: trajectory) and its fake-model fixture')
    .requiredOption('--run <id>', 'the run to promote (a document of the export file)')
    .option('--name <name>', 'case name (default trajectory_<first 8 hex of the run id>)')
    .option('--cases-dir <dir>', 'where to write the case (default: evals/cases of the project)')
    .option('--fixtures-dir <dir>', 'where to write the fixture (default: <config>/model-fixtures)')
    .addHelpText(
      'after',
      `
The model's recorded turns become the fixture's script and the recorded tool calls the expected
calls; \`agent eval run --case <name>\` replays it. A corrupt line is refused with its number.
Exit codes: 0 written · 2 unreadable file, corrupt line or bad option · 3 run not in the file · 4 case exists.`,
    )
    .action(async (file: string, opts: PromoteOpts) => {
      try {
        loadDotEnv();
        const settings = loadSettings();
        const promoted = await promoteTrajectory({
          file,
          runId: opts.run,
          name: opts.name,
          casesDir: path.resolve(opts.casesDir ?? path.join(projectRoot(), 'evals', 'cases')),
          fixturesDir: path.resolve(opts.fixturesDir ?? path.join(settings.configDir, 'model-fixtures')),
        });
        process.stdout.write(`case ${promoted.name}\n  ${promoted.caseFile}\n  ${promoted.fixtureFile}\n`);
        process.exit(EXIT.ok);
      } catch (e) {
        process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exit(exitCodeFor(e));
      }
    });
}
