import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { Logger } from '../../ports/logger';
import type { EnvironmentHandle, ExecutionEnvironment } from '../../ports/execution-environment';
import { ExecutionRequestError } from '../../ports/execution-environment';
import { PROTOCOL_VERSION, readLines, send, toWire } from './protocol';

/** An adapter the service can reap (all three implement `expired`). */
export type ServiceAdapter = ExecutionEnvironment & {
  readonly name: string;
  expired(nowMs: number): EnvironmentHandle[];
  removeOrphans?(): Promise<number>;
};

export interface SandboxServiceOptions {
  readonly socketPath: string;
  readonly adapter: ServiceAdapter;
  readonly log: Logger;
  /** How often the reaper destroys environments whose lease expired. Default 5 s. */
  readonly reapEveryMs?: number;
}

/**
 * The execution service (`agent sandboxd`, plan §28.3): owns sandbox lifecycle behind a unix socket
 * only its own user can open. It holds no database URL, provider key or token (its environment is
 * scrubbed by whoever launches it, and it scrubs itself again at startup). Requests are checked
 * again here: the service trusts no caller.
 */
export class SandboxService {
  private server: net.Server | null = null;
  private reaper: NodeJS.Timeout | null = null;
  private readonly sockets = new Set<net.Socket>();
  private served = 0;

  constructor(private readonly opts: SandboxServiceOptions) {}

  async start(): Promise<void> {
    const dir = path.dirname(this.opts.socketPath);
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    await fs.promises.chmod(dir, 0o700).catch(() => undefined);
    await this.clearStaleSocket();
    const removed = await this.opts.adapter.removeOrphans?.();
    if (removed) this.opts.log.info('removed orphaned sandbox workspaces', { count: removed });
    this.server = net.createServer((socket) => this.onConnection(socket));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.opts.socketPath, () => resolve());
    });
    await fs.promises.chmod(this.opts.socketPath, 0o600);
    this.reaper = setInterval(() => void this.reap(), this.opts.reapEveryMs ?? 5000);
    this.reaper.unref();
  }

  /** A socket file left by a dead service is removed; a live one means another service runs. */
  private async clearStaleSocket(): Promise<void> {
    if (!fs.existsSync(this.opts.socketPath)) return;
    const alive = await new Promise<boolean>((resolve) => {
      const c = net.connect(this.opts.socketPath);
      c.once('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (alive) throw new Error(`another execution service is already listening on ${this.opts.socketPath}`);
    await fs.promises.rm(this.opts.socketPath, { force: true });
  }

  async reap(nowMs = Date.now()): Promise<number> {
    let n = 0;
    for (const h of this.opts.adapter.expired(nowMs)) {
      try {
        await this.opts.adapter.destroy(h);
        n++;
        this.opts.log.info('sandbox lease expired; environment destroyed', { environmentId: h.id });
      } catch (e) {
        this.opts.log.warn('sandbox reaper could not destroy an environment', {
          environmentId: h.id,
          error: String(e),
        });
      }
    }
    return n;
  }

  private onConnection(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    // One request at a time; after its answer the connection stays open for the client's next one
    // (a connect and an accept per command were a measurable part of its cost). A request sent
    // before the previous one's answer is refused and the connection closed.
    let busy = false;
    readLines(
      socket,
      (line) => {
        if (busy) {
          send(socket, {
            type: 'error',
            kind: 'request',
            code: 'bad_request',
            message: 'one request at a time on a connection: wait for the answer before sending the next',
          });
          socket.end();
          return;
        }
        busy = true;
        void this.handle(socket, line).finally(() => (busy = false));
      },
      () => {
        send(socket, { type: 'error', kind: 'request', code: 'request_too_large', message: 'request line too large' });
        socket.end();
      },
    );
  }

  private async handle(socket: net.Socket, line: string): Promise<void> {
    this.served++;
    let req: Record<string, unknown>;
    try {
      req = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return send(socket, { type: 'error', kind: 'request', code: 'bad_request', message: 'request is not JSON' });
    }
    const adapter = this.opts.adapter;
    try {
      switch (req.op) {
        case 'health':
          return send(socket, {
            type: 'result',
            health: {
              ok: true,
              adapter: adapter.name,
              protocol: PROTOCOL_VERSION,
              pid: process.pid,
              served: this.served,
            },
          });
        case 'provision': {
          const handle = await adapter.provision(req.spec as never);
          return send(socket, { type: 'result', handle });
        }
        case 'execute': {
          const controller = new AbortController();
          const onClose = () => controller.abort();
          socket.once('close', onClose);
          try {
            const result = await adapter.execute(req.handle as EnvironmentHandle, req.command as never, {
              signal: controller.signal,
              onOutput:
                req.stream === true
                  ? (stream, chunk) =>
                      send(socket, { type: 'output', stream, data: Buffer.from(chunk).toString('base64') })
                  : undefined,
            });
            return send(socket, { type: 'result', result: toWire(result) });
          } finally {
            socket.off('close', onClose);
          }
        }
        case 'destroy':
          await adapter.destroy(req.handle as EnvironmentHandle);
          return send(socket, { type: 'result' });
        default:
          return send(socket, {
            type: 'error',
            kind: 'request',
            code: 'bad_request',
            message: `unknown op ${String(req.op)}`,
          });
      }
    } catch (e) {
      if (e instanceof ExecutionRequestError)
        return send(socket, { type: 'error', kind: 'request', code: e.code, message: e.message });
      this.opts.log.error('sandbox request failed', {
        op: String(req.op),
        error: e instanceof Error ? e.message : String(e),
      });
      return send(socket, {
        type: 'error',
        kind: 'service',
        code: 'sandbox_failure',
        message: e instanceof Error ? e.message : String(e),
      });
    }
  }

  /** Stops accepting, destroys every environment (killing what runs in them) and removes the socket. */
  async stop(): Promise<void> {
    if (this.reaper) clearInterval(this.reaper);
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    for (const h of this.opts.adapter.expired(Number.MAX_SAFE_INTEGER))
      await this.opts.adapter.destroy(h).catch(() => undefined);
    await fs.promises.rm(this.opts.socketPath, { force: true });
  }
}
