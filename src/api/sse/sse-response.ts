import type { SseSink } from './event-stream';
import type { SseFrame } from './sse-frame';

/** The part of a Node socket the SSE writer uses. */
export interface SseSocket {
  write(chunk: Buffer): boolean;
  readonly writableLength: number;
  readonly destroyed: boolean;
  setTimeout(ms: number): unknown;
  setNoDelay(on: boolean): unknown;
}

/** The slice of the Node/express response an SSE route uses. */
export interface SseResponse {
  status(code: number): unknown;
  setHeader(name: string, value: string): unknown;
  flushHeaders(): void;
  write(chunk: Buffer): boolean;
  end(): void;
  readonly writableLength: number;
  readonly destroyed: boolean;
  readonly headersSent: boolean;
  /** Node sets this when the response body is sent with `Transfer-Encoding: chunked`. */
  readonly chunkedEncoding?: boolean;
  /** The connection, while this response is the one being sent on it (null for a queued pipelined one). */
  readonly socket: SseSocket | null;
}

export interface SseRequest {
  headers: Record<string, string | string[] | undefined>;
  socket: SseSocket;
  on(event: 'close', fn: () => void): unknown;
}

/**
 * Sends the SSE response head and returns the sink the stream writes frames to.
 *
 * Once the head is on the wire and the response is chunked and owns its connection (the normal
 * HTTP/1.1 case), every frame is written straight to the socket as its prebuilt chunk
 * (`SseFrame.chunk`): one `socket.write` of a shared buffer, without Node's per-write chunk header,
 * cork and next-tick uncork in `ServerResponse.write`. The bytes on the wire are exactly what
 * `res.write(frame)` would have sent, and `res.end()` still sends the terminating chunk. Any other
 * response (HTTP/1.0, a pipelined request still queued behind another) is written through `res`.
 */
export function openSse(req: SseRequest, res: SseResponse): SseSink {
  req.socket.setTimeout(0);
  req.socket.setNoDelay(true);
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const socket = res.socket;
  const direct =
    socket !== null && res.chunkedEncoding === true && res.headersSent && res.writableLength === socket.writableLength; // nothing of the response is queued outside the socket
  return direct ? new SocketSink(res, socket) : new ResponseSink(res);
}

/** Writes prebuilt chunks to the connection; ends through the response (terminating chunk). */
class SocketSink implements SseSink {
  constructor(
    private readonly res: SseResponse,
    private readonly socket: SseSocket,
  ) {}

  write(frame: SseFrame): void {
    this.socket.write(frame.chunk);
  }

  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  get closed(): boolean {
    return this.socket.destroyed || this.res.destroyed;
  }

  end(): void {
    this.res.end();
  }
}

/** Writes frames through the response (Node frames them). */
class ResponseSink implements SseSink {
  constructor(private readonly res: SseResponse) {}

  write(frame: SseFrame): void {
    this.res.write(frame.body);
  }

  get bufferedBytes(): number {
    return this.res.writableLength;
  }

  get closed(): boolean {
    return this.res.destroyed;
  }

  end(): void {
    this.res.end();
  }
}
