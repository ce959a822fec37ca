/**
 * The bytes of one or more SSE frames, built once and handed to every client that receives them.
 *
 * `chunk` is the same bytes framed as one HTTP/1.1 chunk (`<hex length>\r\n<frames>\r\n`): a client
 * on a chunked response gets exactly that buffer written to its socket, so a frame fanned out to
 * 1,000 clients costs one serialization, one encoding and one chunk header in total, and one socket
 * write per client (see docs/adr/0014-append-and-fan-out-cost.md). `body` is the unframed frame (a
 * view into `chunk`, not a copy), for a response that is not chunked.
 */
export class SseFrame {
  readonly chunk: Buffer;
  readonly body: Buffer;

  private constructor(body: Buffer) {
    const head = `${body.length.toString(16)}\r\n`;
    this.chunk = Buffer.allocUnsafe(head.length + body.length + 2);
    this.chunk.write(head, 0, 'latin1');
    body.copy(this.chunk, head.length);
    this.chunk.write('\r\n', head.length + body.length, 'latin1');
    this.body = this.chunk.subarray(head.length, head.length + body.length);
  }

  static of(text: string): SseFrame {
    return new SseFrame(Buffer.from(text, 'utf8'));
  }

  /** Several frames as one chunk (one write for a client that takes them all). */
  static concat(frames: readonly SseFrame[]): SseFrame {
    return frames.length === 1 ? frames[0] : new SseFrame(Buffer.concat(frames.map((f) => f.body)));
  }
}
