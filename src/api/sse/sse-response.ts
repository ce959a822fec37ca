import type { SseSink } from './event-stream';

/** The slice of the Node/express response and request an SSE route uses. */
export interface SseResponse extends SseSink {
  status(code: number): unknown;
  setHeader(name: string, value: string): unknown;
  flushHeaders(): void;
}

export interface SseRequest {
  headers: Record<string, string | string[] | undefined>;
  socket: { setTimeout(ms: number): unknown; setNoDelay(on: boolean): unknown };
  on(event: 'close', fn: () => void): unknown;
}

/** Sends the SSE response head; the body is the stream of frames. */
export function openSse(req: SseRequest, res: SseResponse): void {
  req.socket.setTimeout(0);
  req.socket.setNoDelay(true);
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
}
