/* eslint-disable @typescript-eslint/no-require-imports -- the in-process path (Nest, TypeORM, pg) loads only when used */
import type { Command } from 'commander';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { exitCodeFor } from '../exit-codes';
import { findRunningApi } from '../running-api';
import type { RunOpts } from './run-in-process';

const RESERVED = new Set(['get', 'events', 'cancel', 'input', 'review']);
const inProcess = () => require('./run-in-process') as typeof import('./run-in-process');

export function registerRunCommands(program: Command): void {
  const session = program.command('session').description('manage sessions');
  session
    .command('create')
    .description('create a session for an agent and print its id')
    .option('--agent <id>', 'agent id (default: AGENT_DEFAULT_AGENT or "general")')
    .option('--title <title>', 'a title for the session')
    .option('--json', 'print JSON')
    .action((opts: { agent?: string; title?: string; json?: boolean }) => inProcess().createSession(opts));
  session
    .command('fork')
    .description(
      "fork a session at a sequence of its log (default: the end) and print the fork's id; " +
        '--message replaces the user message at --at and runs it in the fork',
    )
    .argument('<session-id>', 'the session to fork')
    .option('--at <sequence>', 'the sequence to fork at (with --message: the sequence of a user message)')
    .option('--message <text>', 'edit and resend: the replacement for the user message at --at')
    .option('--json', 'print JSON: {id, parent_session_id, at_sequence, run_id?}')
    .action((id: string, opts: { at?: string; message?: string; json?: boolean }) => inProcess().forkSession(id, opts));

  program
    .command('run')
    .description(
      'run a message as a new turn and stream its events; or: run get|events|cancel <run-id>, ' +
        'run input <run-id> "<answer>", run review <invocation-id> --retry|--fail',
    )
    .argument('<words...>', 'the message (use -- before a message that starts with get, events or cancel)')
    .option('--json', 'print the stored events as NDJSON on stdout (docs/events.md; always read in-process)')
    .option('--session <id>', 'continue an existing session instead of creating one')
    .option('--model-policy <policy>', 'override the agent model policy, e.g. fake:calculator_then_answer (in-process)')
    .option('--no-local-worker', 'in-process: only submit and stream; leave execution to running workers')
    .option('--in-process', 'never use a running API; build the platform in this process')
    .option('--wait-timeout <seconds>', 'how long to wait for the run to finish', '300')
    .option('--idempotency-key <key>', 'client idempotency key for the submission')
    .option('--retry', 'run review: execute the UNCERTAIN invocation again (it may take effect twice)')
    .option('--fail', 'run review: record the UNCERTAIN invocation as failed; the model is told')
    .option('--reason <text>', 'run review: why')
    .addHelpText(
      'after',
      `
With a platform running on the same data directory (\`npm start\`), or AGENT_API_URL set, the turn
goes through its HTTP API and its workers (set AGENT_API_TOKEN in AUTH_MODE=token); otherwise, and
with --json, --model-policy or --in-process, the platform is built in this process.`,
    )
    .action((words: string[], opts: RunOpts & { inProcess?: boolean }, cmd: Command) => {
      const dashDash = cmd.parent?.args.includes('--') ?? false;
      if (!dashDash && RESERVED.has(words[0] ?? '')) return inProcess().subcommand(words, opts);
      return runMessage(words.join(' '), opts);
    });
}

/** Over a running API when there is one and the options allow it; in-process otherwise. */
async function runMessage(text: string, opts: RunOpts & { inProcess?: boolean }): Promise<never> {
  if (!opts.json && !opts.modelPolicy && !opts.inProcess) {
    let code: number | null;
    try {
      loadDotEnv();
      const api = await findRunningApi(loadSettings());
      const http = require('./run-over-http') as typeof import('./run-over-http');
      code = api ? await http.runMessageOverHttp(api, text, opts) : null;
    } catch (e) {
      process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
      code = exitCodeFor(e); // a ConfigurationError, an unreachable AGENT_API_URL: 5 (unavailable)
    }
    if (code !== null) process.exit(code);
  }
  return inProcess().runInProcess(text, opts);
}
