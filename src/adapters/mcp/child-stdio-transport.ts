import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
// The v1 SDK's line framing on purpose: it reports a line that is not JSON (the v2 one skips it
// silently), which the supervisor turns into a protocol error for the calls in flight (ADR 0051).
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** How a stdio server's process ended. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: string | null;
}

export interface ChildStdioOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  /** The child's whole environment (nothing of this process's is added). */
  readonly env: Readonly<Record<string, string>>;
  /** The host identity to run as (an isolated server's launcher, when the platform runs as root). */
  readonly uid?: number | null;
  readonly gid?: number | null;
  /** Runs once the process has ended (an isolated launcher's leftovers: a gVisor bundle and record). */
  readonly cleanup?: () => void;
}

const GRACE_MS = 2000;

/**
 * An MCP client transport over a child process's stdin/stdout, framed by the SDK's own public
 * `ReadBuffer` and `serializeMessage` (newline-delimited JSON-RPC, exactly as its stdio transport).
 * It exists for one thing the SDK's `StdioClientTransport` does not report: how the process ended
 * (`exit`, set before `onclose`), which the per-server restart policy needs to tell a clean exit
 * from a crash (ADR 0039). Closing ends stdin, then SIGTERM, then SIGKILL, 2 s apart, like the SDK.
 */
export class ChildStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** How the process ended, once it has; null while it runs. */
  exit: ChildExit | null = null;
  /** The child's stderr, available before `start` so no early line is lost. */
  readonly stderr = new PassThrough();
  private child: ChildProcess | null = null;
  private readonly buffer = new ReadBuffer();

  constructor(private readonly options: ChildStdioOptions) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(): Promise<void> {
    if (this.child) throw new Error('ChildStdioTransport already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, [...this.options.args], {
        env: { ...this.options.env },
        cwd: this.options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        ...(this.options.uid != null ? { uid: this.options.uid } : {}),
        ...(this.options.gid != null ? { gid: this.options.gid } : {}),
      });
      this.child = child;
      child.on('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => resolve());
      child.on('exit', (code, signal) => (this.exit = { code, signal }));
      child.on('close', () => {
        this.child = null;
        this.options.cleanup?.();
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => this.received(chunk));
      child.stderr?.pipe(this.stderr);
    });
  }

  private received(chunk: Buffer): void {
    this.buffer.append(chunk);
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (error) {
        this.onerror?.(error as Error);
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      const stdin = this.child?.stdin;
      if (!stdin) throw new Error('not connected');
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const closed = new Promise<void>((r) => child.once('close', () => r()));
    const within = (ms: number) => Promise.race([closed, new Promise((r) => setTimeout(r, ms).unref())]);
    child.stdin?.end();
    await within(GRACE_MS);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await within(GRACE_MS);
    }
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    this.buffer.clear();
  }
}
