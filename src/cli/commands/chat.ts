import * as readline from 'node:readline';
import type { Command } from 'commander';
import { ResolveApprovalCommand } from '../../application/approvals/commands';
import { ProvideRunInputCommand } from '../../application/runs/provide-input';
import { SubmitMessageCommand } from '../../application/runs/submit-message';
import { CreateSessionCommand } from '../../application/sessions/create-session';
import type { Platform } from '../../composition/platform';
import type { StoredEvent } from '../../domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../domain/principal';
import type { MultitaskStrategy } from '../../domain/run/multitask';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';
import { followRun } from '../follow-run';
import { cliBuses } from './approval';

const clip = (s: string, n = 80) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** One concise line of tool activity, or null for events chat does not show. */
function activity(e: StoredEvent, names: Map<string, string>): string | null {
  switch (e.type) {
    case 'tool.call.proposed':
      names.set(e.data.invocationId, e.data.toolName);
      return `  · ${e.data.toolName} ${clip(JSON.stringify(e.data.arguments))}`;
    case 'tool.call.completed':
      return `  ✓ ${names.get(e.data.invocationId) ?? 'tool'}${e.data.trust === 'external_untrusted' ? ' (untrusted data)' : ''}`;
    case 'tool.call.failed':
      return `  ✗ ${names.get(e.data.invocationId) ?? 'tool'}: ${e.data.errorCode}`;
    case 'tool.call.denied':
      return `  ⊘ ${names.get(e.data.invocationId) ?? 'tool'}: ${e.data.reasonCode}`;
    case 'tool.call.suspended':
      return `  ⏸ ${names.get(e.data.invocationId) ?? 'tool'} paused: a call of its program waits for approval`;
    case 'tool.call.uncertain':
      return `  ? ${names.get(e.data.invocationId) ?? 'tool'} is UNCERTAIN: agent run review ${e.data.invocationId} --retry|--fail`;
    default:
      return null;
  }
}

/**
 * The lines the user types, in order, each answering the next prompt. Lines typed before their
 * prompt (while the command starts, or while a run is still streaming) are kept for it: readline
 * emits a line the moment it is typed, and one nobody was waiting for would otherwise be lost.
 * While a run streams, `intercept` may take a line nobody is prompting for (`/queue`, `/interrupt`).
 */
class Lines {
  private readonly typed: string[] = [];
  private waiting: ((line: string | null) => void) | null = null;
  private closed = false;
  intercept: ((line: string) => boolean) | null = null;

  constructor(private readonly rl: readline.Interface) {
    rl.on('line', (line) => {
      const w = this.waiting;
      this.waiting = null;
      if (w) w(line);
      else if (!this.intercept?.(line.trim())) this.typed.push(line);
    });
    rl.on('close', () => {
      this.closed = true;
      this.waiting?.(null);
      this.waiting = null;
    });
  }

  /** Shows `prompt` and resolves with the next line (trimmed), or null once the input is closed. */
  ask(prompt: string): Promise<string | null> {
    const line = this.typed.shift();
    if (line !== undefined) {
      process.stdout.write(`${prompt}${line}\n`);
      return Promise.resolve(line.trim());
    }
    if (this.closed) return Promise.resolve(null);
    this.rl.setPrompt(prompt);
    this.rl.prompt();
    return new Promise((resolve) => (this.waiting = (l) => resolve(l === null ? null : l.trim())));
  }

  /** Hands the lines typed ahead to `take`, keeping those it does not take, in order. */
  takeTyped(take: (line: string) => boolean): void {
    const kept = this.typed.filter((l) => !take(l.trim()));
    this.typed.splice(0, this.typed.length, ...kept);
  }
}

/** `/queue <text>` and `/interrupt <text>`: a message sent while a run works, with its strategy (ADR 0038). */
export function strategyCommand(line: string): { strategy: MultitaskStrategy; text: string } | null {
  const m = /^\/(queue|interrupt)\s+(\S[\s\S]*)$/.exec(line);
  if (!m) return null;
  return { strategy: m[1] === 'queue' ? 'enqueue' : 'interrupt', text: m[2].trim() };
}

interface ChatContext {
  readonly p: Platform;
  readonly commands: Awaited<ReturnType<typeof cliBuses>>['commands'];
  readonly lines: Lines;
  readonly sessionId: string;
  readonly modelPolicy?: string;
}

/**
 * `agent chat` (plan §17): create or resume a session, then for each line: submit it, stream the
 * run's events (tool activity concisely), prompt y/n for approvals and for the agent's questions,
 * and render the answer. Uses an in-process worker restricted to each run. While a run works,
 * `/queue <text>` queues a message behind it and `/interrupt <text>` stops it at its next safe point
 * for a new one (issue 33); the chat then follows those runs in order.
 */
async function chat(p: Platform, opts: { session?: string; modelPolicy?: string }): Promise<number> {
  const { app, commands } = await cliBuses(p);
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  const lines = new Lines(rl);
  try {
    const sessionId = opts.session ?? (await commands.execute(new CreateSessionCommand(LOCAL_PRINCIPAL))).id;
    process.stdout.write(`session ${sessionId} — type a message, or /exit\n`);
    process.stdout.write(
      '  (while the agent works: /queue <message> runs it next, /interrupt <message> stops the run for it)\n',
    );
    const ctx: ChatContext = { p, commands, lines, sessionId, modelPolicy: opts.modelPolicy };
    const next: string[] = [];
    let sending: Promise<void> = Promise.resolve();
    const send = (line: string): boolean => {
      const c = strategyCommand(line);
      if (!c) return false;
      sending = sending.then(() => sendWhileWorking(ctx, c, next));
      return true;
    };
    for (;;) {
      await sending;
      let runId = next.shift();
      if (runId === undefined) {
        const text = await lines.ask('you> ');
        if (text === null) break; // input closed
        if (text === '') continue;
        if (text === '/exit' || text === '/quit') break;
        // At the prompt nothing works: /queue and /interrupt are plain messages.
        runId = (await submit(ctx, strategyCommand(text)?.text ?? text, null)).runId;
      }
      lines.takeTyped(send);
      lines.intercept = send;
      try {
        await followTurn(ctx, runId);
      } finally {
        lines.intercept = null;
      }
    }
    return EXIT.ok;
  } finally {
    rl.close();
    await app.close();
  }
}

function submit(ctx: ChatContext, text: string, strategy: MultitaskStrategy | null) {
  const overrides = ctx.modelPolicy ? { modelPolicy: ctx.modelPolicy } : {};
  return ctx.commands.execute(
    new SubmitMessageCommand(LOCAL_PRINCIPAL, ctx.sessionId, text, null, overrides, strategy),
  );
}

/** A `/queue` or `/interrupt` typed while a run works: submitted now, followed after the run in flight. */
async function sendWhileWorking(
  ctx: ChatContext,
  c: { strategy: MultitaskStrategy; text: string },
  next: string[],
): Promise<void> {
  try {
    const r = await submit(ctx, c.text, c.strategy);
    next.push(r.runId);
    process.stdout.write(
      c.strategy === 'interrupt'
        ? '  ↯ interrupting the current run; your message runs next\n'
        : `  ⧗ queued (${r.position ?? 0} ahead)\n`,
    );
  } catch (err) {
    process.stdout.write(`  could not send: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}

/** Streams one run to its end with its own restricted worker, answering its approvals and questions. */
async function followTurn(ctx: ChatContext, runId: string): Promise<void> {
  const { p, commands, lines } = ctx;
  const worker = p.createWorker({ concurrency: 1, onlyRunId: runId, pollIntervalMs: 500, drainMs: 0 });
  await worker.start();
  const names = new Map<string, string>();
  let answer: string | null = null;
  let chain: Promise<void> = Promise.resolve();
  const handle = async (e: StoredEvent): Promise<void> => {
    const line = activity(e, names);
    if (line) process.stdout.write(`${line}\n`);
    if (e.type === 'assistant.message.completed') answer = e.data.text;
    if (e.type === 'approval.requested' && e.data.actionKind === 'tool_call') {
      const yes = /^y(es)?$/i.test((await lines.ask(`  approve ${e.data.actionSummary}? [y/N] `)) ?? '');
      const reason = yes ? null : (await lines.ask('  reason (optional): ')) || null;
      await commands
        .execute(new ResolveApprovalCommand(LOCAL_PRINCIPAL, e.data.approvalId, yes ? 'approve_once' : 'deny', reason))
        .catch((err: unknown) => {
          process.stdout.write(`  could not resolve: ${err instanceof Error ? err.message : String(err)}\n`);
        });
    }
    if (e.type === 'run.waiting_for_user') {
      process.stdout.write(`  agent asks: ${e.data.question}\n`);
      const reply = (await lines.ask('  your answer> ')) || '(no answer)';
      await commands.execute(new ProvideRunInputCommand(LOCAL_PRINCIPAL, runId, reply, e.data.questionId));
    }
  };
  let terminal: StoredEvent | null;
  try {
    terminal = await followRun(
      p,
      runId,
      LOCAL_PRINCIPAL,
      (e, { child }) => {
        // The chat shows the turn itself; a child run's events stay in the child's session.
        if (child !== null) return;
        chain = chain
          .then(() => handle(e))
          .catch((err: unknown) => {
            process.stdout.write(`  error: ${err instanceof Error ? err.message : String(err)}\n`);
          });
      },
      3_600_000,
    );
    await chain;
  } finally {
    await worker.stop(0);
  }
  if (answer !== null) process.stdout.write(`agent> ${answer as string}\n`);
  if (terminal?.type === 'run.failed')
    process.stdout.write(`run failed: ${terminal.data.reason}: ${terminal.data.message}\n`);
  if (terminal?.type === 'run.cancelled') process.stdout.write('run cancelled\n');
  if (terminal?.type === 'run.interrupted') process.stdout.write('run interrupted by a newer message\n');
}

export function registerChatCommands(program: Command): void {
  program
    .command('chat')
    .description('interactive chat: stream events, approve actions and answer questions as they come')
    .option('--session <id>', 'resume an existing session')
    .option('--model-policy <policy>', 'override the agent model policy')
    .action((opts: { session?: string; modelPolicy?: string }) => withPlatform('cli', (p) => chat(p, opts)));
}
