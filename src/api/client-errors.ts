import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests Node's HTTP parser refuses before any middleware runs (a request line and headers over
 * its 16 KiB limit, a NUL or other control character in a header, a broken request line) get the
 * same error envelope as every other error instead of Node's bare status line (ADR 0041).
 */
export function answerClientErrorsWithEnvelope(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const requestId = randomUUID();
    const body = JSON.stringify({
      error: {
        code: 'malformed_request',
        message: tooLarge
          ? 'the request line and headers exceed the server limit (16 KiB)'
          : 'the request could not be parsed as HTTP',
        details: { reason: err.code ?? null },
        request_id: requestId,
      },
    });
    socket.end(
      `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
