import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { silentLogger } from '../../../src/adapters/logging/pino-logger';
import { FakeExecutionEnvironment } from '../../../src/adapters/sandbox/fake-environment';
import { SandboxClient } from '../../../src/adapters/sandbox/sandbox-client';
import { SandboxService } from '../../../src/adapters/sandbox/sandbox-service';
import { DEFAULT_ENV_ALLOWLIST } from '../../../src/domain/sandbox/request-checks';
import type { ResourceLimits } from '../../../src/ports/execution-environment';

/**
 * The execution service's connections (protocol.ts): one request at a time per connection, and a
 * connection carries the client's next request after an answer (no connect and accept per command).
 * Run against the fake adapter: what is under test is the transport, not the sandbox.
 */
const LIMITS: ResourceLimits = {
  wallClockSeconds: 5,
  cpuSeconds: 1,
  memoryBytes: 64 * 1024 * 1024,
  maxProcesses: 8,
  maxFileBytes: 1024 * 1024,
  workspaceBytes: 1024 * 1024,
  workspaceFiles: 10,
  tmpBytes: 1024 * 1024,
  maxOpenFiles: 32,
  maxOutputBytes: 4096,
};

let dir: string;
let socketPath: string;
let service: SandboxService;
let accepted: number;

async function startService(): Promise<SandboxService> {
  const s = new SandboxService({
    socketPath,
    adapter: new FakeExecutionEnvironment(DEFAULT_ENV_ALLOWLIST),
    log: silentLogger,
  });
  await s.start();
  (s as unknown as { server: net.Server }).server.on('connection', () => accepted++);
  return s;
}

/**
 * Writes `payload` on a connection of its own and collects the answer lines until the service
 * closes it; with `endAfterFirstLine`, the client ends the connection once an answer has arrived
 * (the way a client of protocol 1 before keep-alive did it).
 */
function rawExchange(payload: string, endAfterFirstLine: boolean): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socketPath);
    let buf = '';
    const lines: Record<string, unknown>[] = [];
    c.setEncoding('utf8');
    c.on('data', (d: string) => {
      buf += d;
      for (let i; (i = buf.indexOf('\n')) >= 0; buf = buf.slice(i + 1)) lines.push(JSON.parse(buf.slice(0, i)));
      if (endAfterFirstLine && lines.length > 0) c.end();
    });
    c.once('error', reject);
    c.once('close', () => resolve(lines));
    c.write(payload);
  });
}

/** One request on a connection of its own, the way a client of protocol 1 before keep-alive did it. */
const rawRequest = (req: unknown) => rawExchange(JSON.stringify(req) + '\n', true);

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-conn-'));
  socketPath = path.join(dir, 'run', 'sandboxd.sock');
  accepted = 0;
  service = await startService();
});
afterEach(async () => {
  await service.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('execution service connections', () => {
  it('sequential calls from one client travel on one connection', async () => {
    const client = new SandboxClient({ socketPath });
    const env = await client.provision({ tenantId: 't', runId: 'r', leaseSeconds: 60, limits: LIMITS });
    for (let i = 0; i < 5; i++) {
      const r = await client.execute(env, { argv: ['echo', String(i)] }, { onOutput: () => undefined });
      expect(r.exitCode).toBe(0);
    }
    await client.destroy(env);
    expect((await client.health()).served).toBe(8);
    expect(accepted).toBe(1);
    client.close();
  });

  it('calls at the same time each get a connection of their own', async () => {
    const client = new SandboxClient({ socketPath });
    const results = await Promise.all([1, 2, 3].map(() => client.health()));
    expect(results.every((h) => h.ok === true)).toBe(true);
    expect(accepted).toBe(3);
    await client.health(); // an idle one is reused
    expect(accepted).toBe(3);
    client.close();
  });

  it('answers a client that sends one request and closes', async () => {
    const lines = await rawRequest({ op: 'health' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ type: 'result', health: { ok: true } });
  });

  it('refuses a request sent before the answer to the previous one', async () => {
    // Both in one write: the second arrives while the first is being handled.
    const lines = await rawExchange(
      JSON.stringify({ op: 'provision', spec: { tenantId: 't', runId: 'r', leaseSeconds: 60, limits: LIMITS } }) +
        '\n' +
        JSON.stringify({ op: 'health' }) +
        '\n',
      false,
    );
    expect(lines).toContainEqual(expect.objectContaining({ type: 'error', code: 'bad_request' }));
  });

  it('a connection the service closed while idle is not used again', async () => {
    const client = new SandboxClient({ socketPath });
    expect((await client.health()).ok).toBe(true);
    await service.stop(); // closes every connection, the idle one included
    service = await startService();
    await new Promise((r) => setTimeout(r, 20));
    accepted = 0;
    expect((await client.health()).ok).toBe(true);
    expect(accepted).toBe(1); // the restarted service's first connection
    client.close();
  });
});
