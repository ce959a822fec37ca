import * as path from 'node:path';
import type { Command } from 'commander';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { projectRoot } from '../../config/project-root';
import { AgentError } from '../../domain/errors';
import { withPlatform } from '../context';
import { CaseFileError, formatIssue } from '../eval/case-errors';
import type { EvalCase } from '../eval/case-types';
import { tally } from '../eval/eval-result';
import { loadCases } from '../eval/load-cases';
import { formatProgressLine, formatSummary } from '../eval/report';
import { runSuite } from '../eval/runner';
import { selectCases } from '../eval/select-cases';
import { EXIT, exitCodeFor } from '../exit-codes';
import { registerPromoteCommand } from './eval-promote';
import { loadMemoryCases, type MemoryCase } from '../eval/memory/memory-cases';
import { formatMemorySummary, runMemorySuite } from '../eval/memory/memory-suite';

interface EvalRunOpts {
  suite?: string;
  case?: string[];
  json?: boolean;
  dir?: string;
}

/** Lease used for eval runs unless AGENT_LEASE_SECONDS says otherwise: crash cases wait it out. */
const EVAL_LEASE_SECONDS = '3';

/** `agent eval run`: the deterministic evaluation suite of plan §20 (fake model fixtures, no API key). */
export function registerEvalCommands(program: Command): void {
  const evalCommand = program.command('eval').description('deterministic evaluation suite (evals/cases/*.yaml)');
  registerPromoteCommand(evalCommand);
  evalCommand
    .command('run')
    .description('run the eval cases against the database and print a result per case')
    .option(
      '--case <name...>',
      'run only these cases (id, name or number, e.g. 02_calculator_tool, calculator_tool, 2)',
    )
    .option('--json', 'print the results as one JSON document')
    .option(
      '--suite <name>',
      'cases (evals/cases, default), delegation (evals/delegation: child runs and consensus) or memory (evals/memory: recall@1/@3, policy failures)',
    )
    .option('--dir <dir>', 'directory of case files (default: evals/cases of the project)')
    .addHelpText(
      'after',
      `
Exit codes: 0 every case passed or is pending · 1 a case failed · 2 invalid case files or --case.
Crash cases wait for the run's lease to expire; eval runs use a ${EVAL_LEASE_SECONDS} s lease unless AGENT_LEASE_SECONDS is set.`,
    )
    .action((opts: EvalRunOpts) => {
      if (opts.suite === 'memory') return runMemorySuiteCommand(opts);
      if (opts.suite !== undefined && opts.suite !== 'cases' && opts.suite !== 'delegation') {
        process.stderr.write(`error: unknown suite "${opts.suite}" (cases, delegation or memory)\n`);
        process.exit(EXIT.usage);
      }
      // evals/delegation (issue 32): delegate.run is offered to the cases' agent.
      if (opts.suite === 'delegation') process.env.DELEGATION_ENABLED ??= '1';
      const cases = loadOrExit(opts);
      process.env.AGENT_LEASE_SECONDS ??= EVAL_LEASE_SECONDS;
      return withPlatform('eval', async (p) => {
        const width = Math.max(0, ...cases.map((c) => c.id.length));
        const results = await runSuite(p, cases, {
          onResult: (r) => {
            if (!opts.json) process.stdout.write(`${formatProgressLine(r, width)}\n`);
          },
        });
        const counts = tally(results);
        process.stdout.write(
          opts.json ? `${JSON.stringify({ results, summary: counts }, null, 2)}\n` : `\n${formatSummary(results)}\n`,
        );
        return counts.failed > 0 ? EXIT.failed : EXIT.ok;
      });
    });
}

/** `agent eval run --suite memory`: the memory suite's cases, then recall@1/@3 and the policy-failure count. */
function runMemorySuiteCommand(opts: EvalRunOpts): Promise<never> {
  let cases: MemoryCase[];
  try {
    loadDotEnv();
    const settings = loadSettings();
    const dir = opts.dir ? path.resolve(opts.dir) : path.join(projectRoot(), 'evals', 'memory');
    const all = loadMemoryCases(dir, path.join(settings.configDir, 'model-fixtures'));
    const wanted = opts.case ?? [];
    cases =
      wanted.length === 0
        ? all
        : all.filter((c) => wanted.some((w) => [c.id, c.name, String(Number(c.id.split('_')[0]))].includes(w)));
    if (cases.length === 0) throw new Error(`--case ${wanted.join(' ')} matches no memory case`);
  } catch (e) {
    if (e instanceof CaseFileError) for (const i of e.issues) process.stderr.write(`${formatIssue(i)}\n`);
    else process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(EXIT.usage);
  }
  return withPlatform('eval', async (p) => {
    const width = Math.max(0, ...cases.map((c) => c.id.length));
    const { results, summary } = await runMemorySuite(p, cases, {
      onResult: (r) => {
        if (!opts.json) process.stdout.write(`${formatProgressLine(r, width)}\n`);
      },
    });
    process.stdout.write(
      opts.json ? `${JSON.stringify({ results, summary }, null, 2)}\n` : `\n${formatMemorySummary(summary)}\n`,
    );
    return summary.failed > 0 ? EXIT.failed : EXIT.ok;
  });
}

/** Loads and selects the cases before any database is touched: a bad file is exit 2, nothing run. */
function loadOrExit(opts: EvalRunOpts): EvalCase[] {
  try {
    loadDotEnv();
    const settings = loadSettings();
    const suiteDir = opts.suite === 'delegation' ? 'delegation' : 'cases';
    const dir = opts.dir ? path.resolve(opts.dir) : path.join(projectRoot(), 'evals', suiteDir);
    const cases = loadCases(dir, {
      fixturesDir: path.join(settings.configDir, 'model-fixtures'),
      defaultAgentId: settings.defaultAgentId,
    });
    return selectCases(cases, opts.case);
  } catch (e) {
    if (e instanceof CaseFileError) {
      for (const i of e.issues) process.stderr.write(`${formatIssue(i)}\n`);
      process.stderr.write(`${e.issues.length} problem(s) in eval case files; nothing was run\n`);
      process.exit(EXIT.usage);
    }
    process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(e instanceof AgentError ? exitCodeFor(e) : EXIT.usage);
  }
}
