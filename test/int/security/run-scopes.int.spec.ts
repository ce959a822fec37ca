import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addTokenToFile } from '../../../src/composition/http';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Principal } from '../../../src/domain/principal';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from '../api/api-harness';

// ADR 0032, issue 25 item 1: a run acts with its submitter's scopes, recorded when it is queued.
let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-run-scopes-'));
const file = path.join(dir, 'tokens.json');
const dataDir = path.join(dir, 'data');
const tokens: Record<string, string> = {};
const NO_TOOLS = ['sessions.read', 'sessions.write', 'runs.read', 'runs.write'];
const TENANT: Principal = { tenantId: 'tenant-a', principalId: 'alice', roles: new Set(), scopes: new Set() };

beforeAll(async () => {
  tokens.narrow = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: NO_TOOLS }, []);
  tokens.full = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file, dataDir }, { worker: true });
});
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });

/** Submits `text` in a new session as `who` over HTTP and waits for the run to end. */
async function runAs(who: string, text: string) {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as(who) });
  expect(s.status).toBe(201);
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text }] },
    headers: as(who),
  });
  expect(m.status).toBe(202);
  const runId = m.body.run_id;
  const status = await h.t.waitForTerminal(runId, 30_000);
  const events = await h.t.platform.store.listRunEvents(runId, TENANT);
  const run = await h.t.platform.runs.get(runId, null);
  return { sessionId: s.body.id, runId, status, events, finalText: run?.finalText ?? null };
}

const one = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
  events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);

describe('runs act with their submitter’s scopes (ADR 0032)', () => {
  it('records the submitter’s scope set on run.queued and in the run row', async () => {
    const r = await runAs('narrow', 'What is 2 plus 2?');
    expect(r.status).toBe('completed');
    expect(one(r.events, 'run.queued')[0].data.scopes).toEqual([...NO_TOOLS].sort());
    expect((await h.t.platform.runs.get(r.runId, null))?.scopes).toEqual([...NO_TOOLS].sort());
  });

  it('without tools.use, "write hello to notes.txt" ends with tool.call.denied missing_scope naming tools.use, and the answer says it could not', async () => {
    const r = await runAs('narrow', 'write hello to notes.txt');
    expect(r.status).toBe('completed');
    const denied = one(r.events, 'tool.call.denied');
    expect(denied).toHaveLength(1);
    expect(denied[0].data.reasonCode).toBe('missing_scope');
    expect(denied[0].data.explanation).toContain('tools.use');
    expect(one(r.events, 'tool.call.started')).toEqual([]);
    expect(r.finalText).toMatch(/^I could not write notes\.txt: .*tools\.use/);
    expect(fs.existsSync(path.join(dataDir, 'workspaces', 'tenant-a', r.sessionId, 'notes.txt'))).toBe(false);
  });

  it('with a full user token the same phrase writes the file', async () => {
    const r = await runAs('full', 'write hello to notes.txt');
    expect(r.status).toBe('completed');
    expect(one(r.events, 'tool.call.denied')).toEqual([]);
    expect(one(r.events, 'run.queued')[0].data.scopes).toContain('tools.use');
    expect(r.finalText).toMatch(/^Wrote 5 bytes to notes\.txt/);
    expect(fs.readFileSync(path.join(dataDir, 'workspaces', 'tenant-a', r.sessionId, 'notes.txt'), 'utf8')).toBe(
      'hello',
    );
  });

  it.each([
    ['sandbox', 'run echo hi', 'sandbox.run_command'],
    ['external write', 'send hello to billing', 'demo.external_write'],
    ['artifacts', 'export notes.txt', 'artifact.export'],
    ['workspace reads', 'list files', 'workspace.list_files'],
  ])('denies the %s family before it runs (%s)', async (_family, text, tool) => {
    const r = await runAs('narrow', text);
    expect(r.status).toBe('completed');
    const proposed = one(r.events, 'tool.call.proposed');
    expect(proposed.map((e) => e.data.toolName)).toEqual([tool]);
    const denied = one(r.events, 'tool.call.denied');
    expect(denied.map((e) => [e.data.reasonCode, e.data.explanation.includes('tools.use')])).toEqual([
      ['missing_scope', true],
    ]);
    // Denied before policy, approval and execution: nothing waited for a human, nothing ran.
    for (const type of ['approval.requested', 'tool.call.started', 'tool.call.completed'] as const)
      expect(one(r.events, type)).toEqual([]);
  });
});
