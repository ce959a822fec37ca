import { randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type {
  BridgeCall,
  BridgeCallRecord,
  BridgeGrant,
  BridgeSession,
  BridgeToolInvoker,
  ToolBridge,
} from '../../ports/tool-bridge';

/**
 * The host end of the tool bridge (plan §8.5): the worker listens on one unix socket per program in
 * the bridge directory (0711; the socket 0666 so the sandbox's unprivileged uid can connect, its
 * name 128 random bits), which the execution service binds into that program's sandbox. The
 * protocol is JSON-RPC 2.0, one object per line:
 *
 *   → {"jsonrpc":"2.0","id":1,"method":"tools.call","params":{"token":T,"name":"math.calculate","arguments":{…}}}
 *   ← {"jsonrpc":"2.0","id":1,"result":{…tool output…}}
 *   ← {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"…","data":{"errorCode":"…"}}}
 *   → {"jsonrpc":"2.0","id":2,"method":"tools.list","params":{"token":T}}
 *
 * Every request carries the per-program capability token; a token that is not this program's (a
 * forged one, or another run's) is refused and nothing runs. Limits: a request line of at most
 * 256 KiB, one call at a time per connection, 4 connections per program, and the grant's call
 * budget. The tool itself runs through the `BridgeToolInvoker` (validation, policy, approval,
 * recording); the bridge decides only whether the call may be asked at all.
 */
export const MAX_BRIDGE_LINE_BYTES = 256 * 1024;
const MAX_CONNECTIONS = 4;

type RpcError = { code: number; message: string; data?: { errorCode: string } };

export class ToolBridgeServer implements ToolBridge {
  constructor(
    private readonly dir: string,
    private readonly invoker: BridgeToolInvoker,
  ) {}

  async open(grant: BridgeGrant): Promise<BridgeSession> {
    await fs.promises.mkdir(this.dir, { recursive: true, mode: 0o711 });
    await fs.promises.chmod(this.dir, 0o711);
    const token = randomBytes(32).toString('hex');
    const socketPath = path.join(this.dir, `${randomBytes(16).toString('hex')}.sock`);
    const records: BridgeCallRecord[] = [];
    const abort = new AbortController();
    let used = 0;
    let open = true;
    const server = net.createServer((conn) => serveConnection(conn, call, () => open));
    server.maxConnections = MAX_CONNECTIONS;
    const call = async (req: Record<string, unknown>): Promise<Answer> => {
      const params = (req.params ?? {}) as Record<string, unknown>;
      if (!tokenMatches(params.token, token))
        return refuse(-32003, 'bridge_token_refused', 'the capability token is not valid for this program');
      if (req.method === 'tools.list') return { result: { tools: grant.tools } };
      if (req.method !== 'tools.call')
        return { error: { code: -32601, message: `unknown method ${String(req.method)}` } };
      const name = params.name;
      const args = params.arguments ?? {};
      if (typeof name !== 'string' || typeof args !== 'object' || args === null || Array.isArray(args))
        return { error: { code: -32602, message: 'params.name must be a string and params.arguments an object' } };
      if (!grant.tools.includes(name))
        return refuse(-32004, 'tool_not_bridged', `"${name}" is not a tool this program may call (tools.list)`);
      if (used >= grant.callBudget)
        return refuse(
          -32005,
          'bridge_budget_exhausted',
          `the program's budget of ${grant.callBudget} tool calls is spent`,
        );
      const sequence = ++used;
      const started = performance.now();
      const invoke = grant.invoke ?? ((c: BridgeCall) => this.invoker.invoke(c));
      const out = await invoke({
        grant,
        sequence,
        toolName: name,
        arguments: args as Record<string, unknown>,
        signal: abort.signal,
      });
      records.push({
        sequence,
        toolName: name,
        ok: out.ok,
        ...(out.ok ? {} : { errorCode: out.errorCode }),
        latencyMs: Math.round((performance.now() - started) * 100) / 100,
      });
      return out.ok ? { result: out.output } : refuse(-32001, out.errorCode, out.message);
    };
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    await fs.promises.chmod(socketPath, 0o666);
    server.unref();
    return {
      socketPath,
      token,
      calls: () => [...records],
      close: async () => {
        open = false;
        abort.abort();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await fs.promises.rm(socketPath, { force: true });
      },
    };
  }
}

type Answer = { result?: unknown; error?: RpcError };

/** One connection: newline-delimited requests, answered one at a time, in order. */
function serveConnection(
  conn: net.Socket,
  call: (req: Record<string, unknown>) => Promise<Answer>,
  isOpen: () => boolean,
): void {
  let buf = '';
  let busy = false;
  const reply = (id: unknown, answer: Answer) => {
    if (!conn.destroyed) conn.write(`${JSON.stringify({ jsonrpc: '2.0', id: id ?? null, ...answer })}\n`);
  };
  const pump = async () => {
    if (busy) return;
    busy = true;
    for (let nl = buf.indexOf('\n'); nl >= 0 && isOpen(); nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let req: Record<string, unknown>;
      try {
        req = JSON.parse(line) as Record<string, unknown>;
      } catch {
        reply(null, { error: { code: -32700, message: 'parse error' } });
        continue;
      }
      const answer = await call(req).catch((e: unknown) => ({
        error: { code: -32603, message: e instanceof Error ? e.message : String(e) },
      }));
      reply(req.id, answer);
    }
    busy = false;
  };
  conn.setEncoding('utf8');
  conn.on('error', () => undefined);
  conn.on('data', (chunk: string) => {
    buf += chunk;
    if (Buffer.byteLength(buf) > MAX_BRIDGE_LINE_BYTES) {
      reply(null, { error: { code: -32600, message: `request over ${MAX_BRIDGE_LINE_BYTES} bytes` } });
      conn.destroy();
      return;
    }
    void pump();
  });
}

function refuse(code: number, errorCode: string, message: string): { error: RpcError } {
  return { error: { code, message, data: { errorCode } } };
}

function tokenMatches(given: unknown, token: string): boolean {
  if (typeof given !== 'string' || given.length !== token.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(token));
}
