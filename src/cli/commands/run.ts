import type { Command } from 'commander';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { CreateSessionCommand } from '../../application/sessions/create-session';
import { CancelRunCommand } from '../../application/runs/cancel-run';
import { GetRunQuery, ListRunEventsQuery } from '../../application/runs/queries';
import { SubmitMessageCommand } from '../../application/runs/submit-message';
import { ProvideRunInputCommand } from '../../application/runs/provide-input';
import { ReviewUncertainInvocationCommand } from '../../application/approvals/commands';
import { AppModule } from '../../composition/app.module';
import type { Platform } from '../../composition/platform';
import { LOCAL_PRINCIPAL } from '../../domain/principal';
import type { StoredEvent } from '../../domain/events/payloads';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';
import { followRun } from '../follow-run';
import { formatEvent } from '../format-event';

const RESERVED = new Set(['get', 'events', 'cancel', 'input', 'review']);

async function buses(
  platform: Platform,
): Promise<{ app: INestApplicationContext; commands: CommandBus; queries: QueryBus }> {
  const app = await NestFactory.createApplicationContext(AppModule.forPlatform(platform, { http: false }), {
    logger: false,
  });
  return { app, commands: app.get(CommandBus), queries: app.get(QueryBus) };
}

export function registerRunCommands(program: Command): void {
  program
    .command('session')
    .description('manage sessions')
    .command('create')
    .description('create a session for an agent and print its id')
    .option('--agent <id>', 'agent id (default: AGENT_DEFAULT_AGENT or "general")')
    .option('--title <title>', 'a title for the session')
    .option('--json', 'print JSON')
    .action((opts: { agent?: string; title?: string; json?: boolean }) =>
      withPlatform('cli', async (p) => {
        const { app, commands } = await buses(p);
        const s = await commands.execute(
          new CreateSessionCommand(LOCAL_PRINCIPAL, opts.agent ?? null, opts.title ?? null),
        );
        process.stdout.write(opts.json ? `${JSON.stringify(s)}\n` : `${s.id}\n`);
        await app.close();
        return EXIT.ok;
      }),
    );

  program
    .command('run')
    .description(
      'run a message as a new turn and stream its events; or: run get|events|cancel <run-id>, ' +
        'run input <run-id> "<answer>", run review <invocation-id> --retry|--fail',
    )
    .argument('<words...>', 'the message (use -- before a message that starts with get, events or cancel)')
    .option('--json', 'print events as NDJSON on stdout')
    .option('--session <id>', 'continue an existing session instead of creating one')
    .option('--model-policy <policy>', 'override the agent model policy, e.g. fake:calculator_then_answer')
    .option('--no-local-worker', 'only submit and stream; leave execution to running workers')
    .option('--wait-timeout <seconds>', 'how long to wait for the run to finish', '300')
    .option('--idempotency-key <key>', 'client idempotency key for the submission')
    .option('--retry', 'run review: execute the UNCERTAIN invocation again (it may take effect twice)')
    .option('--fail', 'run review: record the UNCERTAIN invocation as failed; the model is told')
    .option('--reason <text>', 'run review: why')
    .action((words: string[], opts: RunOpts, cmd: Command) => {
      const dashDash = cmd.parent?.args.includes('--') ?? false;
      if (!dashDash && RESERVED.has(words[0] ?? '')) return subcommand(words, opts);
      return withPlatform('cli', (p) => runMessage(p, words.join(' '), opts));
    });
}

interface RunOpts {
  json?: boolean;
  session?: string;
  modelPolicy?: string;
  localWorker: boolean;
  waitTimeout: string;
  idempotencyKey?: string;
  retry?: boolean;
  fail?: boolean;
  reason?: string;
}

async function runMessage(p: Platform, text: string, opts: RunOpts): Promise<number> {
  const { app, commands } = await buses(p);
  try {
    const sessionId = opts.session ?? (await commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL))).id;
    const submitted = await commands.execute(
      new SubmitMessageCommand(
        LOCAL_PRINCIPAL,
        sessionId,
        text,
        opts.idempotencyKey ?? null,
        opts.modelPolicy ? { modelPolicy: opts.modelPolicy } : {},
      ),
    );
    if (!opts.json) process.stdout.write(`run ${submitted.runId} (session ${sessionId})\n`);
    // An in-process worker restricted to this run: it races any running worker fairly (SKIP LOCKED).
    const worker = opts.localWorker
      ? p.createWorker({ concurrency: 1, onlyRunId: submitted.runId, pollIntervalMs: 1000, drainMs: 0 })
      : null;
    await worker?.start();
    let terminal: StoredEvent | null;
    let answer: string | null = null;
    try {
      terminal = await followRun(
        p,
        submitted.runId,
        LOCAL_PRINCIPAL,
        (e) => {
          if (e.type === 'assistant.message.completed') answer = e.data.text;
          if (!opts.json && e.type === 'approval.requested') {
            process.stdout.write(
              `  waiting for approval ${e.data.approvalId}: ${e.data.actionSummary}\n    agent approval approve ${e.data.approvalId}   |   agent approval deny ${e.data.approvalId} --reason "..."\n`,
            );
          }
          if (!opts.json && e.type === 'run.waiting_for_user') {
            process.stdout.write(`  question: ${e.data.question}\n    agent run input ${submitted.runId} "<answer>"\n`);
          }
          process.stdout.write(opts.json ? `${JSON.stringify(e)}\n` : `${formatEvent(e)}\n`);
        },
        Number(opts.waitTimeout) * 1000,
      );
    } finally {
      await worker?.stop(0);
    }
    if (!terminal) {
      process.stderr.write(
        `run ${submitted.runId} did not finish within ${opts.waitTimeout}s; it continues (agent run get ${submitted.runId})\n`,
      );
      return EXIT.failed;
    }
    if (!opts.json) {
      if (answer !== null) process.stdout.write(`\n${answer as string}\n`);
      if (terminal.type === 'run.failed')
        process.stdout.write(`\nrun failed: ${terminal.data.reason}: ${terminal.data.message}\n`);
      if (terminal.type === 'run.cancelled') process.stdout.write('\nrun cancelled\n');
    }
    return terminal.type === 'run.completed' ? EXIT.ok : EXIT.failed;
  } finally {
    await app.close();
  }
}

function subcommand(words: string[], opts: RunOpts): Promise<never> {
  const [verb, runId, ...rest] = words;
  if (verb === 'input') return inputCommand(runId, rest.join(' '), opts);
  if (verb === 'review') return reviewCommand(runId, rest, opts);
  if (!runId || rest.length > 0) {
    process.stderr.write(`usage: agent run ${verb} <run-id>\n`);
    process.exit(EXIT.usage);
  }
  return withPlatform('cli', async (p) => {
    const { app, commands, queries } = await buses(p);
    try {
      if (verb === 'get') {
        const run = await queries.execute(new GetRunQuery(LOCAL_PRINCIPAL, runId));
        process.stdout.write(`${JSON.stringify(run, null, opts.json ? 0 : 2)}\n`);
        return EXIT.ok;
      }
      if (verb === 'events') {
        const events = await queries.execute(new ListRunEventsQuery(LOCAL_PRINCIPAL, runId));
        for (const e of events) process.stdout.write(opts.json ? `${JSON.stringify(e)}\n` : `${formatEvent(e)}\n`);
        return EXIT.ok;
      }
      const r = await commands.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId, 'cancelled from the CLI'));
      process.stdout.write(opts.json ? `${JSON.stringify(r)}\n` : `${r.outcome} (status ${r.status})\n`);
      return EXIT.ok;
    } finally {
      await app.close();
    }
  });
}

/** `agent run input <run-id> "<answer>"`: answers the run's outstanding question (idempotent). */
function inputCommand(runId: string | undefined, text: string, opts: RunOpts): Promise<never> {
  if (!runId || text.trim() === '') {
    process.stderr.write('usage: agent run input <run-id> "<answer>"\n');
    process.exit(EXIT.usage);
  }
  return withPlatform('cli', async (p) => {
    const { app, commands } = await buses(p);
    try {
      const r = await commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, text));
      process.stdout.write(
        opts.json
          ? `${JSON.stringify(r)}\n`
          : `${r.outcome === 'resumed' ? 'answer delivered; run resumed' : 'this answer was already delivered'} (run ${r.runId})\n`,
      );
      return EXIT.ok;
    } finally {
      await app.close();
    }
  });
}

/** `agent run review <invocation-id> --retry|--fail`: decides an UNCERTAIN invocation (plan §8.4). */
function reviewCommand(invocationId: string | undefined, rest: string[], opts: RunOpts): Promise<never> {
  if (!invocationId || rest.length > 0 || opts.retry === opts.fail) {
    process.stderr.write('usage: agent run review <invocation-id> --retry|--fail [--reason <text>]\n');
    process.exit(EXIT.usage);
  }
  return withPlatform('cli', async (p) => {
    const { app, commands } = await buses(p);
    try {
      const r = await commands.execute(
        new ReviewUncertainInvocationCommand(
          LOCAL_PRINCIPAL,
          invocationId,
          opts.retry ? 'retry' : 'fail',
          opts.reason ?? null,
        ),
      );
      process.stdout.write(
        opts.json
          ? `${JSON.stringify(r)}\n`
          : `invocation ${invocationId}: ${opts.retry ? 'will be retried' : 'marked failed'}; run ${r.runId} ${r.run}\n`,
      );
      return EXIT.ok;
    } finally {
      await app.close();
    }
  });
}
