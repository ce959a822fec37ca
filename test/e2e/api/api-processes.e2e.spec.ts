import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { EventSource } from 'eventsource';
import { addTokenToFile } from '../../../src/composition/http';
import type { WireBody } from '../../int/api/api-harness';
import { EVENT_CATALOG } from '../../../src/domain/events/catalog';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { ensureBuilt, startAgent, waitFor, type Proc } from '../../support/processes';
import { createTestDb, type TestDb } from '../../support/test-db';

let tdb: TestDb;
let t: TestPlatform;
const procs: Proc[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function start(args: string[], env: Record<string, string>): Proc {
  const p = startAgent(args, { DATABASE_URL: tdb.url, AGENT_POLL_INTERVAL_MS: '300', ...env });
  procs.push(p);
  return p;
}

async function startApi(port: number, env: Record<string, string> = {}): Promise<Proc> {
  const p = start(['api'], { PORT: String(port), ...env });
  await waitFor(
    'the API to listen',
    async () => (await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200,
    60_000,
  ).catch((e: Error) => {
    throw new Error(`${e.message}\n${p.output()}`);
  });
  return p;
}

async function stop(p: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  p.child.kill(signal);
  await p.exited;
}

async function json(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: WireBody }> {
  const r = await fetch(url, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : null) as WireBody };
}

const runCount = async () =>
  Number((await t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM runs')).rows[0].n);
const ask = (text: string) => ({ content: [{ type: 'text', text }] });

beforeAll(async () => {
  ensureBuilt();
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url);
});
afterAll(async () => {
  for (const p of procs) p.child.kill('SIGKILL');
  await t?.close();
  await tdb?.drop();
});

describe('agent api and agent worker as separate processes', () => {
  it('answers the calculator question over HTTP: 202 at once, a stream to run.completed, 391 from GET /v1/runs/{id}; a repeated Idempotency-Key makes no second run', async () => {
    const port = await freePort();
    const api = await startApi(port);
    const worker = start(['worker'], {});
    try {
      const base = `http://127.0.0.1:${port}`;
      const s = await json('POST', `${base}/v1/sessions`, {});
      expect(s.status).toBe(201);
      const runsBefore = await runCount();
      const started = Date.now();
      const m = await json('POST', `${base}/v1/sessions/${s.body.id}/messages`, ask('What is 17 multiplied by 23?'), {
        'idempotency-key': 'calc-1',
      });
      expect(m.status).toBe(202);
      expect(m.body).toEqual({ run_id: expect.any(String), status: 'queued' });
      expect(Date.now() - started).toBeLessThan(2000);
      const types: string[] = [];
      await new Promise<void>((resolve, reject) => {
        const es = new EventSource(`${base}/v1/runs/${m.body.run_id}/events`);
        const timer = setTimeout(
          () => (es.close(), reject(new Error(`no run.completed; got ${types.join(', ')}`))),
          30_000,
        );
        for (const type of Object.keys(EVENT_CATALOG)) {
          es.addEventListener(type, () => {
            types.push(type);
            if (type === 'run.completed' || type === 'run.failed') {
              clearTimeout(timer);
              es.close();
              resolve();
            }
          });
        }
      });
      expect(types[types.length - 1]).toBe('run.completed');
      const run = await json('GET', `${base}/v1/runs/${m.body.run_id}`);
      expect(run.body.status).toBe('completed');
      expect(run.body.final_text).toContain('391');
      const again = await json(
        'POST',
        `${base}/v1/sessions/${s.body.id}/messages`,
        ask('What is 17 multiplied by 23?'),
        { 'idempotency-key': 'calc-1' },
      );
      expect(again).toEqual({ status: 202, body: { run_id: m.body.run_id, status: 'queued' } });
      expect(await runCount()).toBe(runsBefore + 1);
    } finally {
      await stop(worker);
      await stop(api);
    }
  });

  it('an eventsource client that loses its API process mid-run reconnects with Last-Event-ID and ends with every persisted event exactly once, in order', async () => {
    const port = await freePort();
    let api = await startApi(port);
    const worker = start(['worker'], { FAKE_MODEL_LATENCY_MS: '1500' });
    try {
      const base = `http://127.0.0.1:${port}`;
      const s = await json('POST', `${base}/v1/sessions`, {});
      const m = await json('POST', `${base}/v1/sessions/${s.body.id}/messages`, ask('What is 17 multiplied by 23?'));
      const received: { id: string; type: string }[] = [];
      let errors = 0;
      let restarted = false;
      const es = new EventSource(`${base}/v1/runs/${m.body.run_id}/events`);
      es.onerror = () => void errors++;
      const done = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out; got ${received.map((r) => r.type).join(', ')}`)),
          60_000,
        );
        for (const type of Object.keys(EVENT_CATALOG)) {
          es.addEventListener(type, (ev) => {
            received.push({ id: ev.lastEventId, type });
            if (type === 'run.completed' || type === 'run.failed' || type === 'run.cancelled') {
              clearTimeout(timer);
              resolve();
            }
          });
        }
      });
      // Cut the stream mid-run: kill the API process hard once the model has been called, then start a new one.
      await waitFor(
        'the first model call on the stream',
        async () => received.some((r) => r.type === 'model.request.started'),
        30_000,
        20,
      );
      await stop(api, 'SIGKILL');
      restarted = true;
      api = await startApi(port);
      await done;
      es.close();
      expect(restarted).toBe(true);
      expect(errors).toBeGreaterThan(0);
      const persisted = await t.platform.store.listRunEvents(m.body.run_id, LOCAL_PRINCIPAL);
      expect(received.map((r) => Number(r.id))).toEqual(persisted.map((e) => e.sequence));
      expect(received.map((r) => r.type)).toEqual(persisted.map((e) => e.type));
      expect(received[received.length - 1].type).toBe('run.completed');
    } finally {
      await stop(worker);
      await stop(api);
    }
  });

  it("token mode: tenant B gets 404 for tenant A's session, run and events; no token is 401; a missing scope is 403", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-e2e-tokens-'));
    const file = path.join(dir, 'tokens.json');
    const a = addTokenToFile(file, { tenantId: 'a', principalId: 'alice', scopes: ['user'] }, []);
    const b = addTokenToFile(file, { tenantId: 'b', principalId: 'bob', scopes: ['user'] }, []);
    const reader = addTokenToFile(
      file,
      { tenantId: 'a', principalId: 'alice', scopes: ['sessions.read', 'runs.read'] },
      [],
    );
    const port = await freePort();
    const api = await startApi(port, { AUTH_MODE: 'token', AUTH_TOKENS_FILE: file });
    try {
      const base = `http://127.0.0.1:${port}`;
      const bearer = (tok: string) => ({ authorization: `Bearer ${tok}` });
      const s = await json('POST', `${base}/v1/sessions`, {}, bearer(a));
      const m = await json('POST', `${base}/v1/sessions/${s.body.id}/messages`, ask('hello'), bearer(a));
      expect(m.status).toBe(202);
      for (const url of [
        `/v1/sessions/${s.body.id}`,
        `/v1/runs/${m.body.run_id}`,
        `/v1/sessions/${s.body.id}/events`,
        `/v1/runs/${m.body.run_id}/events`,
      ]) {
        const r = await json('GET', `${base}${url}`, undefined, bearer(b));
        expect({ url, status: r.status, code: r.body.error.code }).toEqual({ url, status: 404, code: 'not_found' });
      }
      expect((await json('GET', `${base}/v1/approvals`, undefined, bearer(b))).body.items).toEqual([]);
      expect((await json('GET', `${base}/v1/sessions/${s.body.id}`)).status).toBe(401);
      expect((await json('GET', `${base}/v1/sessions/${s.body.id}`, undefined, bearer(reader))).status).toBe(200);
      const forbidden = await json('POST', `${base}/v1/runs/${m.body.run_id}/cancel`, undefined, bearer(reader));
      expect(forbidden.status).toBe(403);
      expect(forbidden.body.error.code).toBe('authorization_error');
    } finally {
      await stop(api);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('token mode without a tokens file refuses to start, with a clear message', async () => {
    const port = await freePort();
    const api = start(['api'], { PORT: String(port), AUTH_MODE: 'token' });
    const code = await api.exited;
    expect(code).not.toBe(0);
    expect(api.output()).toMatch(/AUTH_MODE=token needs AUTH_TOKENS_FILE/);
    const missing = start(['api'], {
      PORT: String(port),
      AUTH_MODE: 'token',
      AUTH_TOKENS_FILE: path.join(os.tmpdir(), 'no-such-tokens.json'),
    });
    expect(await missing.exited).not.toBe(0);
    expect(missing.output()).toMatch(/AUTH_TOKENS_FILE .* cannot be read/);
  });
});
