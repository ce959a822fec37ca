import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CreateSessionCommand } from '../../src/application/sessions/create-session';
import { SubmitMessageCommand, type RunOverrides } from '../../src/application/runs/submit-message';
import { AtomicLineFile, TrajectoryVerificationError } from '../../src/composition/trajectory';
import { NotFoundError, ValidationError } from '../../src/domain/errors';
import { LOCAL_PRINCIPAL, type Principal } from '../../src/domain/principal';
import type { TrajectoryDocument } from '../../src/domain/trajectory/document';
import type { ExportFilters } from '../../src/ports/trajectory';
import type { Worker } from '../../src/runtime/worker';
import { createTestPlatform, type TestPlatform } from '../support/platform';
import { createTestDb, type TestDb } from '../support/test-db';

/** Trajectory export over the real database (plan §31, issue 9 items 4–6). */
let tdb: TestDb;
let t: TestPlatform;
let worker: Worker;
let dir: string;

const FAKE_OPENAI_KEY = 'sk-proj-' + 'Abc123Def456Ghi789Jkl012Mno345';
const FAKE_BEARER = 'Bearer ' + 'eyZ9xQ2mK7pL4nR8sT1vW3yB6cD0fG5hJ';

const alice: Principal = { ...LOCAL_PRINCIPAL, principalId: 'alice' };
const bob: Principal = { ...LOCAL_PRINCIPAL, principalId: 'bob' };
const otherTenant: Principal = { ...LOCAL_PRINCIPAL, tenantId: 'other-tenant', principalId: 'carol' };

beforeAll(async () => {
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { leaseSeconds: 3, pollIntervalMs: 200 });
  worker = t.platform.createWorker({ concurrency: 4, pollIntervalMs: 200, drainMs: 5000 });
  await worker.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trajectory-export-'));
  await t.platform.trajectories.consent.grant('local', 'alice', 'test');
  await t.platform.trajectories.consent.grant('other-tenant', 'carol', 'test');
});
afterAll(async () => {
  await worker.stop();
  await t.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function runAs(principal: Principal, text: string, overrides: RunOverrides = {}): Promise<string> {
  const session = await t.commands.execute(new CreateSessionCommand(principal));
  const r = await t.commands.execute(new SubmitMessageCommand(principal, session.id, text, null, overrides));
  await t.waitForTerminal(r.runId);
  return r.runId;
}

async function exportTo(
  file: string,
  filters: Partial<ExportFilters>,
  tenant = 'local',
): Promise<{ docs: TrajectoryDocument[]; summary: Awaited<ReturnType<typeof exportLines>>['summary'] }> {
  const out = AtomicLineFile.open(file);
  try {
    const r = await exportLines(out, filters, tenant);
    await out.commit();
    const docs = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as TrajectoryDocument);
    return { docs, summary: r.summary };
  } catch (e) {
    await out.discard();
    throw e;
  }
}

function exportLines(out: AtomicLineFile, filters: Partial<ExportFilters>, tenant: string) {
  return t.platform.trajectories.exporter.export(tenant, { status: 'all', ...filters }, out.write);
}

/** Rewrites a stored tool result, as a row written before the store's scanner covered it would look. */
async function plantInToolResult(runId: string, result: Record<string, unknown>): Promise<void> {
  const r = await t.platform.db.query(
    `UPDATE events SET payload = jsonb_set(payload, '{result}', $2::jsonb)
      WHERE run_id = $1 AND event_type = 'tool.call.completed'`,
    [runId, JSON.stringify(result)],
  );
  expect(r.rowCount).toBe(1);
}

describe('trajectory export', () => {
  it('exports a calculator run in the messages shape, with outcome, usage, models and the consent stamp', async () => {
    const runId = await runAs(alice, 'What is 17 multiplied by 23?');
    const stamp = (await t.platform.store.listRunEvents(runId, alice)).find((e) => e.type === 'run.consent_stamped');
    expect(stamp?.data).toEqual({ principalId: 'alice', trajectoryExport: 'granted', consentVersion: 1 });

    const { docs, summary } = await exportTo(path.join(dir, 'calc.jsonl'), { runId });
    expect(summary.exported).toBe(1);
    const [doc] = docs;
    expect(doc.format).toBe('agent-core.trajectory');
    expect(doc.schema_version).toBe(1);
    expect(doc.run_id).toBe(runId);
    expect(doc.principal_id).toBe('alice');
    expect(doc.outcome).toEqual({
      label: 'succeeded',
      status: 'completed',
      reason: null,
      message: null,
      error_code: null,
    });
    expect(doc.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
    expect(doc.messages[0].content).toContain('# Agent instructions');
    expect(doc.messages[1].content).toBe('What is 17 multiplied by 23?');
    const call = doc.messages[2];
    expect(call.role === 'assistant' && call.tool_calls?.[0].function).toEqual({
      name: 'math.calculate',
      arguments: JSON.stringify({ expression: '17 * 23' }),
    });
    const result = doc.messages[3];
    expect(result.role === 'tool' && call.role === 'assistant' && result.tool_call_id).toBe(
      call.role === 'assistant' ? call.tool_calls?.[0].id : null,
    );
    expect(JSON.parse(result.content as string)).toMatchObject({ result: '391' });
    expect(doc.messages[4]).toEqual({ role: 'assistant', content: 'The result is 391.' });
    expect(doc.models).toEqual(['demo:demo']);
    expect(doc.model_calls).toHaveLength(2);
    expect(doc.usage.output_tokens).toBeGreaterThan(0);
    expect(doc.redaction.replaced).toBe(0);
  });

  it('replaces a planted API key and bearer token in a tool result', async () => {
    const runId = await runAs(alice, 'What is 2 to the power of 8?');
    await plantInToolResult(runId, {
      result: '256',
      note: `key ${FAKE_OPENAI_KEY} and header Authorization: ${FAKE_BEARER}`,
      headers: { authorization: 'opaque-session-value' },
    });
    const file = path.join(dir, 'planted.jsonl');
    const { docs } = await exportTo(file, { runId });
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain(FAKE_OPENAI_KEY);
    expect(text).not.toContain(FAKE_BEARER.slice(7));
    expect(text).not.toContain('opaque-session-value');
    expect(text).toContain('[REDACTED:openai_api_key]');
    expect(text).toContain('[REDACTED:bearer_token]');
    expect(docs[0].redaction.replaced).toBe(3);
    expect(docs[0].redaction.rules).toEqual(['bearer_token', 'credential_key', 'openai_api_key']);
  });

  it.each([
    ['a credential in a URL', { dsn: 'postgres://svc:s3cretpass@db.internal:5432/prod' }, 'credential_in_url'],
    ['a high-entropy token', { token_like: 'x9Qm2Lk7Pz4Rt8Vw1Ys6Bn3Cd5Fg0Hj2Kl' }, 'high_entropy_token'],
  ])('aborts and writes nothing when the verifier catches %s the replacer missed', async (_label, planted, rule) => {
    const runId = await runAs(alice, 'What is 12 times 9?');
    await plantInToolResult(runId, { result: '108', ...planted });
    const file = path.join(dir, `abort-${rule}.jsonl`);
    const before = fs.readdirSync(dir);
    const error = await exportTo(file, { runId }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrajectoryVerificationError);
    expect((error as TrajectoryVerificationError).details).toMatchObject({ runId, rule });
    expect((error as Error).message).not.toContain(Object.values(planted)[0]);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.readdirSync(dir)).toEqual(before);
    // Undo the plant so that whole-tenant exports in later tests are not aborted by it.
    await plantInToolResult(runId, { result: '108' });
  });

  it('labels a failed run failed with its reason', async () => {
    const runId = await runAs(alice, 'go', { modelPolicy: 'fake:permanent_failure' });
    const { docs } = await exportTo(path.join(dir, 'failed.jsonl'), { runId });
    expect(docs[0].outcome).toMatchObject({ label: 'failed', status: 'failed', reason: 'model_permanent_error' });
    const failedOnly = await exportTo(path.join(dir, 'failed-only.jsonl'), { status: 'failed' });
    expect(failedOnly.docs.every((d) => d.outcome.label === 'failed')).toBe(true);
    expect(failedOnly.docs.map((d) => d.run_id)).toContain(runId);
  });

  it('skips and counts runs of a principal without consent, and runs that started before a grant', async () => {
    const bobBefore = await runAs(bob, 'What is 1 + 1?');
    const session = await t.commands.execute(new CreateSessionCommand(bob));
    const { docs, summary } = await exportTo(path.join(dir, 'bob-none.jsonl'), { runId: bobBefore });
    expect(docs).toHaveLength(0);
    expect(summary).toMatchObject({ scanned: 1, exported: 0, skippedNoConsent: 1 });

    await t.platform.trajectories.consent.grant('local', 'bob', 'test');
    const r = await t.commands.execute(new SubmitMessageCommand(bob, session.id, 'What is 2 + 2?'));
    await t.waitForTerminal(r.runId);
    const all = await exportTo(path.join(dir, 'bob-all.jsonl'), { sessionId: session.id });
    expect(all.docs.map((d) => d.run_id)).toEqual([r.runId]);
    const old = await exportTo(path.join(dir, 'bob-old.jsonl'), { runId: bobBefore });
    expect(old.summary.skippedNoConsent).toBe(1);

    // Withdrawal reaches backward: the run stamped `granted` is no longer exported.
    await t.platform.trajectories.consent.withdraw('local', 'bob', 'test');
    const after = await exportTo(path.join(dir, 'bob-after.jsonl'), { runId: r.runId });
    expect(after.summary).toMatchObject({ exported: 0, skippedNoConsent: 1 });
  });

  it('resumes from a cursor without repeating or skipping a run', async () => {
    const session = await t.commands.execute(new CreateSessionCommand(alice));
    const ids: string[] = [];
    for (const q of ['What is 3 + 3?', 'What is 4 + 4?', 'What is 5 + 5?']) {
      const r = await t.commands.execute(new SubmitMessageCommand(alice, session.id, q));
      await t.waitForTerminal(r.runId);
      ids.push(r.runId);
    }
    const first = await exportTo(path.join(dir, 'page1.jsonl'), { sessionId: session.id, limit: 2 });
    expect(first.docs.map((d) => d.run_id)).toEqual(ids.slice(0, 2));
    const second = await exportTo(path.join(dir, 'page2.jsonl'), {
      sessionId: session.id,
      cursor: first.summary.cursor ?? undefined,
    });
    expect(second.docs.map((d) => d.run_id)).toEqual(ids.slice(2));
  });

  it('covers one tenant: another tenant’s run is not found and never exported', async () => {
    const carolRun = await runAs(otherTenant, 'What is 6 + 6?');
    await expect(exportTo(path.join(dir, 'x.jsonl'), { runId: carolRun })).rejects.toBeInstanceOf(NotFoundError);
    const local = await exportTo(path.join(dir, 'local-all.jsonl'), {});
    expect(local.docs.some((d) => d.run_id === carolRun)).toBe(false);
    expect(local.docs.every((d) => d.tenant_id === 'local')).toBe(true);
    const theirs = await exportTo(path.join(dir, 'other.jsonl'), {}, 'other-tenant');
    expect(theirs.docs.map((d) => d.run_id)).toEqual([carolRun]);
  });

  it('refuses bad input with a clear error and leaves no file', async () => {
    const file = path.join(dir, 'bad.jsonl');
    await expect(exportTo(file, { runId: '00000000-0000-4000-8000-000000000000' })).rejects.toThrow(
      'run 00000000-0000-4000-8000-000000000000 not found',
    );
    await expect(exportTo(file, { sessionId: '00000000-0000-4000-8000-000000000000' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(exportTo(file, { cursor: 'not-a-cursor' })).rejects.toThrow('export cursor is not valid');
    await expect(exportTo(file, { since: 'yesterday-ish' })).rejects.toBeInstanceOf(ValidationError);
    expect(fs.existsSync(file)).toBe(false);
    expect(() => AtomicLineFile.open(path.join(dir, 'no-such-dir', 'x.jsonl'))).toThrow(/cannot write/);
    expect(() => AtomicLineFile.open(dir)).toThrow(/is a directory/);
    expect(fs.readdirSync(dir).filter((f) => f.includes('.partial-'))).toEqual([]);
  });
});
