import type { Socket } from 'node:net';
import type { ExecutionResult } from '../../ports/execution-environment';

/**
 * The execution service's wire protocol (docs/sandbox.md, ADR 0018): JSON lines over a local unix
 * socket (mode 0600), one request at a time per connection; after the answer (a `result` or an
 * `error`) the connection may carry the client's next request.
 *
 *   → {"op":"health"}                                   ← {"type":"result","health":{...}}
 *   → {"op":"provision","spec":EnvironmentSpec}         ← {"type":"result","handle":EnvironmentHandle}
 *   → {"op":"execute","handle":H,"command":C}           ← {"type":"output","stream":"stdout","data":"<base64>"}*
 *                                                       ← {"type":"result","result":WireResult}
 *   → {"op":"destroy","handle":H}                       ← {"type":"result"}
 *   any failure                                         ← {"type":"error","kind":"request"|"service","code":"…","message":"…"}
 *
 * Closing the connection while `execute` runs cancels the command (reason `cancelled`). A request
 * sent before the previous one's answer is refused and the connection closed.
 */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
export const PROTOCOL_VERSION = 1;

export type WireResult = Omit<ExecutionResult, 'stdout' | 'stderr'> & { stdout: string; stderr: string };

export type WireMessage =
  | { type: 'output'; stream: 'stdout' | 'stderr'; data: string }
  | { type: 'result'; [k: string]: unknown }
  | { type: 'error'; kind: 'request' | 'service'; code: string; message: string };

export function toWire(r: ExecutionResult): WireResult {
  return { ...r, stdout: Buffer.from(r.stdout).toString('base64'), stderr: Buffer.from(r.stderr).toString('base64') };
}

export function fromWire(w: WireResult): ExecutionResult {
  return { ...w, stdout: Buffer.from(w.stdout, 'base64'), stderr: Buffer.from(w.stderr, 'base64') };
}

/** Calls `onLine` for each complete line; refuses lines over `max` bytes. */
export function readLines(
  socket: Socket,
  onLine: (line: string) => void,
  onTooLarge: () => void,
  max = MAX_REQUEST_BYTES,
): void {
  let buf = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim() !== '') onLine(line);
    }
    if (buf.length > max) {
      buf = '';
      onTooLarge();
    }
  });
}

export function send(socket: Socket, msg: WireMessage): void {
  if (!socket.destroyed) socket.write(JSON.stringify(msg) + '\n');
}
