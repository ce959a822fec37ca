import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { ForkSessionCommand } from '../../application/sessions/fork-session';
import { CreateSessionCommand } from '../../application/sessions/create-session';
import { CancelRunCommand } from '../../application/runs/cancel-run';
import { GetRunQuery, ListRunEventsQuery } from '../../application/runs/queries';
import { SubmitMessageCommand } from '../../application/runs/submit-message';
import { ProvideRunInputCommand } from '../../application/runs/provide-input';
import { ReviewUncertainInvocationCommand } from '../../application/approvals/commands';
import { AppModule } from '../../composition/app.module';
import type { Platform } from '../../composition/platform';
import { LOCAL_PRINCIPAL } from '../../domain/principal';
import { ValidationError } from '../../domain/errors';
import type { StoredEvent } from '../../domain/events/payloads';
import { approvalHint, questionHint } from '../run-hints';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';
import { followRun } from '../follow-run';
import { formatEvent } from '../format-event';

async function buses(
  platform: Platform,
): Promise<{ app: INestApplicationContext; commands: CommandBus; queries: QueryBus }> {
  const app = await NestFactory.createApplicationContext(AppModule.forPlatform(platform, { http: false }), {
    logger: false,
  });
  return { app, commands: app.get(CommandBus), queries: app.get(QueryBus) };
}

/** `agent session create`. */
export function createSession(opts: { agent?: string; title?: string; json?: boolean }): Promise<never> {
  return withPlatform('cli', async (p) => {
    const { app, commands } = await buses(p);
    const s = await commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL, opts.agent ?? null, opts.title ?? null));
    process.stdout.write(opts.json ? `${JSON.stringify(s)}\n` : `${s.id}\n`);
    await app.close();
    return EXIT.ok;
  });
}

/** `agent session fork <id>`: a fork of one of the local principal's sessions (issue 33). */
export function forkSession(id: string, opts: { at?: string; message?: string; json?: boolean }): Promise<never> {
  return withPlatform('cli', async (p) => {
    const at = opts.at === undefined ? null : Number(opts.at);
    if (at !== null && (!Number.isInteger(at) || at < 1))
      throw new ValidationError(`--at must be a positive whole number, got "${opts.at}"`, { field: 'at_sequence' });
    const { app, commands } = await buses(p);
    try {
      const f = await commands.execute(new ForkSessionCommand(LOCAL_PRINCIPAL, id, at, opts.message ?? null));
      const wire = {
        id: f.id,
        parent_session_id: f.parentSessionId,
        at_sequence: f.atSequence,
        ...(f.runId === null ? {} : { run_id: f.runId }),
      };
      process.stdout.write(opts.json ? `${JSON.stringify(wire)}\n` : `${f.id}\n`);
      return EXIT.ok;
    } finally {
      await app.close();
    }
  });
}

/** `agent run "<message>"` in this process: the platform built here, with a worker for this run only. */
export function runInProcess(text: string, opts: RunOpts): Promise<never> {
  return withPlatform('cli', (p) => runMessageInProcess(p, text, opts));
}

export interface RunOpts {
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

/**
 * The message's run: on a new session, created with it in one append (ADR 0053); on `--session`, or
 * with an idempotency key (which only the submit records), submitted to it.
 */
async function submitRunMessage(
  commands: CommandBus,
  text: string,
  opts: RunOpts,
): Promise<{ sessionId: string; runId: string }> {
  const overrides = opts.modelPolicy ? { modelPolicy: opts.modelPolicy } : {};
  if (opts.session === undefined && opts.idempotencyKey === undefined) {
    const s = await commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL, null, null, {}, { text, overrides }));
    return { sessionId: s.id, runId: s.runId! };
  }
  const sessionId = opts.session ?? (await commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL))).id;
  const submitted = await commands.execute(
    new SubmitMessageCommand(LOCAL_PRINCIPAL, sessionId, text, opts.idempotencyKey ?? null, overrides),
  );
  return { sessionId, runId: submitted.runId };
}

async function runMessageInProcess(p: Platform, text: string, opts: RunOpts): Promise<number> {
  const { app, commands } = await buses(p);
  try {
    const { sessionId, runId } = await submitRunMessage(commands, text, opts);
    const submitted = { runId };
    if (!opts.json) process.stdout.write(`run ${submitted.runId} (session ${sessionId})\n`);
    // An in-process worker restricted to this run and its child runs: it races any running worker
    // fairly (SKIP LOCKED).
    const worker = opts.localWorker
      ? p.createWorker({ concurrency: 4, onlyRunId: submitted.runId, pollIntervalMs: 1000, drainMs: 0 })
      : null;
    await worker?.start();
    let terminal: StoredEvent | null;
    let answer: string | null = null;
    try {
      terminal = await followRun(
        p,
        submitted.runId,
        LOCAL_PRINCIPAL,
        (e, { child }) => {
          // A child run's events (delegate.run) are shown indented under the parent's; its answer is not the run's.
          if (child === null && e.type === 'assistant.message.completed') answer = e.data.text;
          if (!opts.json && e.type === 'approval.requested') process.stdout.write(approvalHint(e.data));
          if (!opts.json && e.type === 'run.waiting_for_user')
            process.stdout.write(questionHint(e.runId ?? submitted.runId, e.data));
          process.stdout.write(opts.json ? `${JSON.stringify(e)}\n` : `${formatEvent(e, child)}\n`);
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

export function subcommand(words: string[], opts: RunOpts): Promise<never> {
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
      // Like the API's 409: a run that already ended was not cancelled, and a script must see that.
      if (r.outcome !== 'already_terminal') return EXIT.ok;
      process.stderr.write(`error: run ${runId} already ended (${r.status}); there is nothing to cancel\n`);
      return EXIT.conflict;
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
