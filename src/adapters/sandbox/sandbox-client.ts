import * as net from 'node:net';
import type {
  EnvironmentHandle,
  EnvironmentSpec,
  ExecuteOptions,
  ExecutionCommand,
  ExecutionEnvironment,
  ExecutionResult,
} from '../../ports/execution-environment';
import { ExecutionRequestError, ExecutionUnavailableError } from '../../ports/execution-environment';
import { fromWire, readLines, type WireMessage, type WireResult } from './protocol';

export interface SandboxClientOptions {
  readonly socketPath: string;
  /** Called once when the socket is missing or refuses: may start a service and resolve when it listens. */
  readonly ensureService?: () => Promise<void>;
}

/** Idle connections kept for the next calls (more calls at once each open their own). */
const MAX_IDLE = 4;

/** A connection to the service and the handlers of the call it carries (none while idle). */
interface Connection {
  readonly socket: net.Socket;
  onMessage: ((msg: WireMessage) => void) | null;
  /** The service closed the connection. */
  onEnd: (() => void) | null;
  onError: ((e: Error) => void) | null;
  gone: boolean;
}

/**
 * The worker's side of the ExecutionEnvironment port: every call is one request on a connection to
 * the execution service's unix socket. A connection carries one call at a time; after the answer it
 * is kept (unreferenced, so it never keeps the process alive) for a later call, which spares the
 * connect and the service's accept on every command. The worker never spawns a sandbox itself.
 */
export class SandboxClient implements ExecutionEnvironment {
  private ensured: Promise<void> | null = null;
  private readonly idle: Connection[] = [];

  constructor(private readonly opts: SandboxClientOptions) {}

  async health(): Promise<Record<string, unknown>> {
    const r = await this.call({ op: 'health' });
    return r.health as Record<string, unknown>;
  }

  async provision(spec: EnvironmentSpec): Promise<EnvironmentHandle> {
    return (await this.call({ op: 'provision', spec })).handle as EnvironmentHandle;
  }

  async execute(
    env: EnvironmentHandle,
    command: ExecutionCommand,
    opts: ExecuteOptions = {},
  ): Promise<ExecutionResult> {
    const r = await this.call({ op: 'execute', handle: env, command, stream: Boolean(opts.onOutput) }, opts);
    return fromWire(r.result as WireResult);
  }

  async destroy(env: EnvironmentHandle): Promise<void> {
    await this.call({ op: 'destroy', handle: env });
  }

  /** Closes the idle connections (a call in flight keeps its own). */
  close(): void {
    for (const c of this.idle.splice(0)) c.socket.destroy();
  }

  private async call(req: Record<string, unknown>, opts: ExecuteOptions = {}): Promise<Record<string, unknown>> {
    try {
      return await this.once(req, opts);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (!this.opts.ensureService || (code !== 'ENOENT' && code !== 'ECONNREFUSED'))
        throw wrap(e, this.opts.socketPath);
      this.ensured ??= this.opts.ensureService().catch((err: unknown) => {
        this.ensured = null;
        throw err;
      });
      try {
        await this.ensured;
      } catch (err) {
        throw new ExecutionUnavailableError(
          `the execution service could not be started: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      try {
        return await this.once(req, opts);
      } catch (err) {
        throw wrap(err, this.opts.socketPath);
      }
    }
  }

  /** An idle connection that is still open, or a new one. */
  private connection(): Connection {
    for (let c = this.idle.pop(); c; c = this.idle.pop()) {
      if (!c.gone && !c.socket.destroyed && c.socket.writable) {
        c.socket.ref();
        return c;
      }
    }
    const socket = net.connect(this.opts.socketPath);
    const c: Connection = { socket, onMessage: null, onEnd: null, onError: null, gone: false };
    const gone = () => {
      c.gone = true;
      const i = this.idle.indexOf(c);
      if (i >= 0) this.idle.splice(i, 1);
    };
    socket.on('error', (e) => {
      gone();
      c.onError?.(e);
    });
    const ended = () => {
      gone();
      c.onEnd?.();
    };
    socket.once('end', ended);
    socket.once('close', ended);
    readLines(
      socket,
      (line) => c.onMessage?.(JSON.parse(line) as WireMessage),
      () => c.onError?.(new ExecutionUnavailableError('answer too large')),
      256 * 1024 * 1024,
    );
    return c;
  }

  private release(c: Connection): void {
    if (c.gone || c.socket.destroyed || this.idle.length >= MAX_IDLE) {
      c.socket.end();
      return;
    }
    c.socket.unref();
    this.idle.push(c);
  }

  private once(req: Record<string, unknown>, opts: ExecuteOptions): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      if (opts.signal?.aborted) return reject(new ExecutionRequestError('cancelled', 'cancelled by the caller'));
      const c = this.connection();
      let settled = false;
      /** Settles the call; the connection goes back to the idle ones only after a complete answer. */
      const done = (f: () => void, reusable: boolean) => {
        if (settled) return;
        settled = true;
        opts.signal?.removeEventListener('abort', onAbort);
        c.onMessage = c.onEnd = c.onError = null;
        if (reusable) this.release(c);
        else c.socket.destroy();
        f();
      };
      // Closing the connection cancels a running command on the service's side.
      const onAbort = () =>
        done(() => reject(new ExecutionRequestError('cancelled', 'cancelled by the caller')), false);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      c.onError = (e) => done(() => reject(e), false);
      c.onEnd = () =>
        done(
          () => reject(new ExecutionUnavailableError('the execution service closed the connection without an answer')),
          false,
        );
      c.onMessage = (msg) => {
        if (msg.type === 'output') opts.onOutput?.(msg.stream, Buffer.from(msg.data, 'base64'));
        else if (msg.type === 'error')
          done(
            () =>
              reject(
                msg.kind === 'request'
                  ? new ExecutionRequestError(msg.code, msg.message)
                  : new ExecutionUnavailableError(msg.message),
              ),
            true,
          );
        else done(() => resolve(msg), true);
      };
      // Written at once: on a new connection it goes out as soon as the connect completes.
      c.socket.write(JSON.stringify(req) + '\n');
    });
  }
}

function wrap(e: unknown, socketPath: string): Error {
  if (e instanceof ExecutionRequestError || e instanceof ExecutionUnavailableError) return e;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ECONNREFUSED')
    return new ExecutionUnavailableError(
      `the execution service is not running (no listener on ${socketPath}); start it with \`agent sandboxd\` or \`npm start\``,
    );
  return new ExecutionUnavailableError(e instanceof Error ? e.message : String(e));
}
