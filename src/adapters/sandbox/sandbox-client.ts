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

/**
 * The worker's side of the ExecutionEnvironment port: every call is one connection to the execution
 * service's unix socket. The worker never spawns a sandbox itself.
 */
export class SandboxClient implements ExecutionEnvironment {
  private ensured: Promise<void> | null = null;

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

  private once(req: Record<string, unknown>, opts: ExecuteOptions): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.opts.socketPath);
      let settled = false;
      const done = (f: () => void) => {
        if (settled) return;
        settled = true;
        opts.signal?.removeEventListener('abort', onAbort);
        f();
      };
      // Closing the connection cancels a running command on the service's side.
      const onAbort = () => {
        socket.destroy();
        done(() => reject(new ExecutionRequestError('cancelled', 'cancelled by the caller')));
      };
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      socket.once('connect', () => socket.write(JSON.stringify(req) + '\n'));
      socket.on('error', (e) => done(() => reject(e)));
      socket.once('close', () =>
        done(() =>
          reject(new ExecutionUnavailableError('the execution service closed the connection without an answer')),
        ),
      );
      readLines(
        socket,
        (line) => {
          const msg = JSON.parse(line) as WireMessage;
          if (msg.type === 'output') opts.onOutput?.(msg.stream, Buffer.from(msg.data, 'base64'));
          else if (msg.type === 'error')
            done(() =>
              reject(
                msg.kind === 'request'
                  ? new ExecutionRequestError(msg.code, msg.message)
                  : new ExecutionUnavailableError(msg.message),
              ),
            );
          else {
            socket.end();
            done(() => resolve(msg));
          }
        },
        () => done(() => reject(new ExecutionUnavailableError('answer too large'))),
        256 * 1024 * 1024,
      );
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
