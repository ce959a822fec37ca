import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';

/**
 * A local `node:http` server that replays recorded provider responses to the real SDKs and records
 * the request bodies they sent. Recordings live in test/fixtures/providers/<api>/<name>.http as raw
 * HTTP responses: a status line, headers, a blank line and the body exactly as on the wire (SSE for
 * streams). Headers named `x-replay-*` are directives for this server and never sent:
 *   x-replay-drop-after: <n>   send the first n SSE events, then destroy the socket (connection reset)
 * SSE bodies are written one event per chunk, a few ms apart, like a real server.
 */

export const FIXTURES_DIR = join(__dirname, '..', '..', '..', 'fixtures', 'providers');

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The body byte-for-byte as the SDK sent it. */
  readonly raw: string;
  readonly json: Record<string, unknown>;
}

export interface Recording {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly dropAfterEvents: number | null;
}

export function loadRecording(name: string): Recording {
  const text = readFileSync(join(FIXTURES_DIR, `${name}.http`), 'utf8');
  const split = text.indexOf('\n\n');
  const head = split < 0 ? text : text.slice(0, split);
  const body = split < 0 ? '' : text.slice(split + 2);
  const [statusLine, ...headerLines] = head.split('\n');
  const m = /^HTTP\/1\.1 (\d{3})/.exec(statusLine);
  if (!m) throw new Error(`recording ${name}: bad status line "${statusLine}"`);
  const headers: Record<string, string> = {};
  let dropAfterEvents: number | null = null;
  for (const line of headerLines) {
    const i = line.indexOf(':');
    const key = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    if (key === 'x-replay-drop-after') dropAfterEvents = Number(value);
    else headers[key] = value;
  }
  return { status: Number(m[1]), headers, body, dropAfterEvents };
}

export class ReplayServer {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: { name: string; recording: Recording }[] = [];
  /** Answers every request the queue has nothing for (a provider that rate-limits for good). */
  private fallback: { name: string; recording: Recording } | null = null;
  private readonly sockets = new Set<Socket>();
  private server!: Server;
  private port = 0;

  static async start(): Promise<ReplayServer> {
    const s = new ReplayServer();
    s.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, unknown> = {};
        try {
          json = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
        } catch {
          /* recorded as raw only */
        }
        s.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, json });
        const next = s.queue.shift() ?? s.fallback;
        if (!next) {
          res.writeHead(599, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({ error: { message: `replay server: no recording queued for ${req.method} ${req.url}` } }),
          );
          return;
        }
        void s.respond(res, next.recording);
      });
    });
    s.server.on('connection', (socket) => {
      s.sockets.add(socket);
      socket.on('close', () => s.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    s.port = (s.server.address() as AddressInfo).port;
    return s;
  }

  /** `http://127.0.0.1:<port>`; OpenAI-style base URLs add `/v1`, Anthropic's must not. */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Queues recordings (`openai-responses/text`) to answer the next requests, in order. */
  enqueue(...names: string[]): this {
    for (const name of names) this.queue.push({ name, recording: loadRecording(name) });
    return this;
  }

  /** Answers with `name` whenever nothing is queued, until `reset()`. */
  always(name: string): this {
    this.fallback = { name, recording: loadRecording(name) };
    return this;
  }

  get pending(): number {
    return this.queue.length;
  }

  reset(): void {
    this.queue.length = 0;
    this.fallback = null;
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async respond(res: ServerResponse, r: Recording): Promise<void> {
    const sse = (r.headers['content-type'] ?? '').startsWith('text/event-stream');
    res.writeHead(r.status, r.headers);
    if (!sse) {
      res.end(r.body);
      return;
    }
    const events = r.body.split(/\n\n/).filter((e) => e.trim() !== '');
    for (let i = 0; i < events.length; i++) {
      if (r.dropAfterEvents !== null && i >= r.dropAfterEvents) {
        res.socket?.destroy();
        return;
      }
      if (res.destroyed) return;
      res.write(`${events[i]}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    if (r.dropAfterEvents !== null) {
      res.socket?.destroy();
      return;
    }
    res.end();
  }
}
