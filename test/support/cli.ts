import { spawn, type ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import { ROOT, waitFor } from './processes';

/** `bin/agent.js`: the command a user runs (`npx agent …`). */
export const AGENT_BIN = path.join(ROOT, 'bin', 'agent.js');

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A clean environment plus `env`: what a user's shell would hand the command. */
function environment(env: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn', ...env };
}

/** Runs `agent <args>` to its end in a real process; never throws for a non-zero exit. */
export function agentCli(args: string[], env: Record<string, string>, timeoutMs = 90_000): Promise<CliResult> {
  const cli = startCli(args, env);
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), timeoutMs);
  return cli.exited.then((code) => {
    clearTimeout(timer);
    return { code, stdout: cli.stdout(), stderr: cli.stderr() };
  });
}

export interface RunningCli {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<number | null>;
  /** Resolves with the first match of `re` in stdout once it appears. */
  waitForOutput(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/** Starts `agent <args>` and leaves it running (a streaming `agent run`, say). */
export function startCli(args: string[], env: Record<string, string>): RunningCli {
  return wrap(spawn(process.execPath, [AGENT_BIN, ...args], { cwd: ROOT, env: environment(env), stdio: 'pipe' }));
}

function wrap(child: ChildProcess, clean: (s: string) => string = (s) => s): RunningCli {
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return {
    child,
    stdout: () => clean(out),
    stderr: () => err,
    exited,
    waitForOutput: (re, timeoutMs = 60_000) =>
      waitFor(`${String(re)} in the output`, () => Promise.resolve(clean(out).match(re)), timeoutMs, 50).catch(
        (e: Error) => {
          throw new Error(`${e.message}\n--- stdout\n${clean(out)}\n--- stderr\n${err}`);
        },
      ),
  };
}

/** Terminal control sequences (cursor moves, line clears) and carriage returns, for matching. */
const stripTerminal = (s: string) =>
  // eslint-disable-next-line no-control-regex -- these are the sequences a terminal program writes
  s.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');

export interface TerminalSession extends RunningCli {
  /** Types `text` and Enter, as a user at the keyboard. */
  type(text: string): void;
}

/**
 * `agent <args>` in a pseudo-terminal (util-linux `script`), so the command sees a TTY on its
 * stdin and stdout exactly as in a user's terminal; what we write is typed at its keyboard.
 */
export function startInTerminal(args: string[], env: Record<string, string>): TerminalSession {
  const command = [process.execPath, AGENT_BIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const child = spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
    cwd: ROOT,
    env: { ...environment(env), TERM: 'xterm' },
    stdio: 'pipe',
  });
  return { ...wrap(child, stripTerminal), type: (text) => child.stdin?.write(`${text}\r`) };
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
