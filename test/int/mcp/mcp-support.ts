import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Logger } from '../../../src/ports/logger';

export const EVERYTHING = path.resolve(
  __dirname,
  '../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);
const CONFIG = path.resolve(__dirname, '../../../config');

/** `mcp.yaml` with one server: server-everything from npm over stdio, classified read-only. */
export const EVERYTHING_STDIO_MCP_YAML = `
version: 1
servers:
  - id: everything
    transport: { type: stdio, command: '\${node}', args: ['${EVERYTHING}', 'stdio'] }
    classification: { side_effect: read, risk: low, idempotency: read_only }
`;

/** A copy of config/ with `mcp.yaml` and extra agent files added; removed by the returned cleanup. */
export function makeConfigDir(mcpYaml: string, agents: Record<string, string> = {}): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-mcp-config-'));
  fs.cpSync(CONFIG, dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'mcp.yaml'), mcpYaml);
  for (const [file, text] of Object.entries(agents)) fs.writeFileSync(path.join(dir, 'agents', file), text);
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export const MCP_AGENT = `
id: mcp_demo
version: 1
name: MCP demo
instructions: Use the MCP tools when asked.
model_policy: demo
enabled_tools: [math.calculate]
mcp_servers: [everything]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 20, max_tool_calls: 20, deadline_seconds: 120 }
`;

export interface CapturedLog {
  readonly level: string;
  readonly msg: string;
  readonly fields: Record<string, unknown>;
}

/** A Logger that keeps every record (the tests assert on logged reasons). */
export function capturingLogger(sink: CapturedLog[] = []): Logger & { records: CapturedLog[] } {
  const make = (bindings: Record<string, unknown>): Logger & { records: CapturedLog[] } => {
    const at =
      (level: string) =>
      (msg: string, fields: Record<string, unknown> = {}) =>
        sink.push({ level, msg, fields: { ...bindings, ...fields } });
    return {
      records: sink,
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      debug: at('debug'),
      child: (b) => make({ ...bindings, ...b }),
    };
  };
  return make({});
}

export async function until<T>(
  what: string,
  probe: () => Promise<T | null> | T | null,
  timeoutMs = 15_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** server-everything from npm in Streamable HTTP mode (`node dist/index.js streamableHttp`, `PORT`). */
export async function startEverythingHttp(port: number): Promise<{ stop(): Promise<void>; pid: number }> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server-everything (http) did not start')), 20_000);
    child.stderr.on('data', (b: Buffer) => {
      if (b.toString().includes('listening on port')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything (http) exited with ${code}`)));
  });
  return {
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

/**
 * A reverse proxy in front of the HTTP server that refuses (401) any request without
 * `Authorization: Bearer <token>` — the credential the platform must send, taken from the env.
 */
export async function startAuthProxy(
  port: number,
  targetPort: number,
  token: string,
): Promise<{ stop(): Promise<void>; seen: { authorized: number; refused: number } }> {
  const http = await import('node:http');
  const seen = { authorized: 0, refused: 0 };
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      seen.refused++;
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    seen.authorized++;
    const headers = { ...req.headers };
    delete headers.authorization;
    const upstream = http.request(
      { host: '127.0.0.1', port: targetPort, path: req.url, method: req.method, headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    seen,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
