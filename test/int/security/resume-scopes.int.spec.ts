import type { INestApplication } from '@nestjs/common';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { revokeToken } from '../../../src/api/auth/token-admin';
import { sha256Hex } from '../../../src/api/auth/token-file';
import { addTokenToFile, createHttpApp } from '../../../src/composition/http';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Principal } from '../../../src/domain/principal';
import type { Worker } from '../../../src/runtime/worker';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call } from '../api/api-harness';
import { makeConfigDir } from '../mcp/mcp-support';

// ADR 0032, issue 25: a run that waited for approval and is resumed by another worker after its
// submitter's token was revoked still runs with its recorded scope set — and no wider, although
// the principal's other token (which approved it) holds more.
const AGENT = `
id: scoped
version: 1
name: Scoped
instructions: Test agent.
model_policy: fake:send_then_secret
enabled_tools: [demo.external_write, test.secret_read]
policy_profile: default
limits: { max_steps: 10, max_model_calls: 10, max_tool_calls: 10, deadline_seconds: 120 }
`;
const FIXTURE = `name: send_then_secret
description: an external write that waits for approval, then a tool that needs secrets.read
turns:
  - tool_calls:
      - name: demo.external_write
        arguments: { target: "billing", text: "invoice 7" }
  - tool_calls:
      - name: test.secret_read
        arguments: {}
  - text: "done"
`;
const SUBMITTER_SCOPES = ['runs.read', 'runs.write', 'sessions.read', 'sessions.write', 'tools.use'];

let tdb: TestDb;
let t: TestPlatform;
let app: INestApplication;
let base: string;
let config: { dir: string; remove(): void };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-resume-scopes-'));
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
let secretReads = 0;
const workers: Worker[] = [];

beforeAll(async () => {
  config = makeConfigDir('version: 1\nservers: []\n', { 'scoped.yaml': AGENT });
  fs.writeFileSync(path.join(config.dir, 'model-fixtures', 'send_then_secret.yaml'), FIXTURE);
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, {
    configDir: config.dir,
    dataDir: path.join(dir, 'data'),
    leaseSeconds: 5,
    pollIntervalMs: 100,
    authMode: 'token',
    authTokensFile: file,
    apiRateLimitPerMinute: 0,
  });
  t.platform.registry.register({
    spec: {
      name: 'test.secret_read',
      version: '1.0.0',
      description: 'Reads a secret (test tool).',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      outputSchema: null,
      sideEffect: 'read',
      risk: 'low',
      idempotency: 'read_only',
      requiredScopes: ['secrets.read'],
      timeoutSeconds: 5,
      maximumOutputBytes: 1024,
      allowParallel: false,
    },
    execute() {
      secretReads++;
      return Promise.resolve({ ok: true as const, output: { secret: 'x' } });
    },
  });
  tokens.submitter = addTokenToFile(file, { tenantId: 'acme', principalId: 'alice', scopes: SUBMITTER_SCOPES }, []);
  tokens.other = addTokenToFile(file, { tenantId: 'acme', principalId: 'alice', scopes: ['user', 'secrets.read'] }, [
    'secrets.read',
  ]);
  app = await createHttpApp(t.platform);
  await app.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await app?.close();
  await t?.close();
  await tdb?.drop();
  config?.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });
const ALICE: Principal = { tenantId: 'acme', principalId: 'alice', roles: new Set(), scopes: new Set() };

async function waitForStatus(runId: string, status: string): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    const run = await t.platform.runs.get(runId, null);
    if (run?.status === status) return;
    if (Date.now() > end) throw new Error(`run ${runId} is ${run?.status}, expected ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const of = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
  events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);

it('resumes on another worker after the submitter’s token is revoked, with the recorded set and no wider', async () => {
  const first = t.platform.createWorker({ workerId: 'worker-one', concurrency: 1, pollIntervalMs: 100 });
  workers.push(first);
  await first.start();
  const s = await call(base, 'POST', '/v1/sessions', { body: { agent_id: 'scoped' }, headers: as('submitter') });
  expect(s.status).toBe(201);
  const m = await call(base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text: 'send the invoice' }] },
    headers: as('submitter'),
  });
  expect(m.status).toBe(202);
  const runId: string = m.body.run_id;
  await waitForStatus(runId, 'waiting_for_approval');
  await first.stop();

  // The submitter's token is revoked while the run waits: it authenticates nobody from now on.
  revokeToken(file, sha256Hex(tokens.submitter).slice(0, 12));
  expect((await call(base, 'GET', '/v1/sessions', { headers: as('submitter') })).status).toBe(401);

  // Alice approves from her other token, which holds more (secrets.read) than the run does.
  const pending = await call(base, 'GET', '/v1/approvals?status=pending', { headers: as('other') });
  expect(pending.body.items).toHaveLength(1);
  const approvalId = String(pending.body.items[0].id);
  const resolved = await call(base, 'POST', `/v1/approvals/${approvalId}/resolve`, {
    body: { decision: 'approve_once' },
    headers: as('other'),
  });
  expect(resolved.status).toBe(200);

  const second = t.platform.createWorker({ workerId: 'worker-two', concurrency: 1, pollIntervalMs: 100 });
  workers.push(second);
  await second.start();
  expect(await t.waitForTerminal(runId, 30_000)).toBe('completed');

  const events = await t.platform.store.listRunEvents(runId, ALICE);
  expect(of(events, 'run.queued')[0].data.scopes).toEqual(SUBMITTER_SCOPES);
  expect(of(events, 'run.claimed').map((e) => e.data.workerId)).toEqual(['worker-one', 'worker-two']);
  // What the set holds still runs after the revocation: the approved external write...
  expect(of(events, 'tool.call.completed')).toHaveLength(1);
  // ...and what it does not hold is denied, though the approver's token holds it.
  const denied = of(events, 'tool.call.denied');
  expect(denied.map((e) => e.data.reasonCode)).toEqual(['missing_scope']);
  expect(denied[0].data.explanation).toContain('secrets.read');
  expect(secretReads).toBe(0);
  expect((await t.platform.runs.get(runId, null))?.scopes).toEqual(SUBMITTER_SCOPES);
});
