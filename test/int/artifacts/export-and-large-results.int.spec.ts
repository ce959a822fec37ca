import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadCases } from '../../../src/cli/eval/load-cases';
import { runSuite } from '../../../src/cli/eval/runner';
import { projectRoot } from '../../../src/config/project-root';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { ToolExecutionContext } from '../../../src/ports/tool';
import type { Worker } from '../../../src/runtime/worker';
import { extensionsOf } from '../../../src/tools/tool-extensions';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

let tdb: TestDb;
let t: TestPlatform;
let dir: string;
let outside: string;
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const rows = async () =>
  Number((await t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM artifacts')).rows[0].n);

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-export-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-outside-'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'TOP SECRET');
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, {
    dataDir: path.join(dir, 'data'),
    artifactDir: path.join(dir, 'artifacts'),
    leaseSeconds: 3,
    pollIntervalMs: 200,
  });
});
afterAll(async () => {
  await t.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

describe('artifact.export', () => {
  let ctx: ToolExecutionContext;
  let ws: string;
  const tool = () => t.platform.registry.get('artifact.export')!;
  const exportPath = async (p: string) => {
    const n = extensionsOf(tool()).normalize!({ path: p });
    if (!n.ok) return { ok: false as const, errorCode: n.errorCode, message: n.message };
    return tool().execute(n.value, ctx);
  };

  beforeAll(async () => {
    const { runId, sessionId } = await t.submit('hello'); // a real run to attach artifacts to (no worker)
    ctx = {
      runId,
      sessionId,
      tenantId: 'local',
      principalId: 'local-user',
      invocationId: 'inv-1',
      idempotencyKey: 'key-1',
      clock: t.platform.clock,
      signal: new AbortController().signal,
    };
    ws = path.join(dir, 'data', 'workspaces', 'local', sessionId);
    fs.mkdirSync(path.join(ws, 'out'), { recursive: true });
  });

  it('copies a workspace file into the store and returns id, name, size and SHA-256', async () => {
    const bytes = Buffer.from('a,b\n1,2\n');
    fs.writeFileSync(path.join(ws, 'out', 'table.csv'), bytes);
    const r = await exportPath('./out//table.csv');
    expect(r).toEqual({
      ok: true,
      output: {
        artifact_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'table.csv',
        media_type: 'text/csv',
        size_bytes: bytes.length,
        sha256: sha(bytes),
      },
    });
    const id = (r as unknown as { output: { artifact_id: string } }).output.artifact_id;
    const content = await t.platform.artifacts.open('local', id);
    const chunks: Buffer[] = [];
    for await (const c of content!.stream) chunks.push(Buffer.from(c));
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    expect(content!.metadata).toMatchObject({ runId: ctx.runId, sessionId: ctx.sessionId, source: 'artifact.export' });
  });

  it('refuses traversal, absolute paths, symlinks (in or out) and directories, creating nothing', async () => {
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'leak.txt'));
    fs.writeFileSync(path.join(ws, 'inside.txt'), 'fine');
    fs.symlinkSync(path.join(ws, 'inside.txt'), path.join(ws, 'alias.txt'));
    fs.symlinkSync(outside, path.join(ws, 'door'));
    fs.symlinkSync(path.join(outside, 'nowhere'), path.join(ws, 'dangling.txt'));
    const before = await rows();
    const cases: [string, string, RegExp][] = [
      ['../../../etc/passwd', 'path_outside_workspace', /path traversal/],
      ['/etc/passwd', 'path_outside_workspace', /absolute paths are not allowed/],
      ['leak.txt', 'path_outside_workspace', /leak.txt is a symlink; only regular files can be exported/],
      ['alias.txt', 'path_outside_workspace', /alias.txt is a symlink/],
      ['door/secret.txt', 'path_outside_workspace', /door\/secret.txt resolves outside the workspace/],
      ['dangling.txt', 'path_outside_workspace', /symlink/],
      ['out', 'not_a_file', /out is not a regular file/],
      ['missing.txt', 'file_not_found', /no file missing.txt in the workspace/],
    ];
    for (const [p, code, message] of cases) {
      const r = await exportPath(p);
      expect({ p, ok: r.ok, code: r.ok ? null : r.errorCode }).toEqual({ p, ok: false, code });
      expect(r.ok ? '' : r.message).toMatch(message);
      expect(r.ok ? '' : r.message).not.toContain('TOP SECRET');
    }
    expect(await rows()).toBe(before);
  });
});

describe('through the demo model and the tool pipeline', () => {
  let worker: Worker;
  beforeAll(async () => {
    worker = t.platform.createWorker({ concurrency: 2, pollIntervalMs: 200, drainMs: 5000 });
    await worker.start();
  });
  afterAll(() => worker.stop());

  const of = <T extends StoredEvent['type']>(events: StoredEvent[], type: T) =>
    events.filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);

  it('"export <path>" runs artifact.export and records artifact.created before the run completes', async () => {
    const w = await t.submit('write twelve bytes to notes.md');
    expect(await t.waitForTerminal(w.runId)).toBe('completed');
    const e = await t.submit('export notes.md', {}, w.sessionId);
    expect(await t.waitForTerminal(e.runId)).toBe('completed');
    const events = await t.events(e.runId);
    const types = events.map((x) => x.type);
    expect(types.indexOf('artifact.created')).toBeGreaterThan(types.indexOf('tool.call.started'));
    expect(types.indexOf('artifact.created')).toBeLessThan(types.indexOf('tool.call.completed'));
    const created = of(events, 'artifact.created')[0].data;
    expect(created).toMatchObject({
      name: 'notes.md',
      mediaType: 'text/markdown',
      sizeBytes: 12,
      sha256: sha('twelve bytes'),
    });
    const run = await t.platform.runs.get(e.runId, null);
    expect(run?.finalText).toBe(
      `Exported notes.md as artifact ${created.artifactId} (12 bytes, sha256 ${sha('twelve bytes')}).`,
    );
  });

  it('keeps a result over the tool’s output limit whole as an artifact and gives the model an excerpt and the reference', async () => {
    const w = await t.submit('list files');
    expect(await t.waitForTerminal(w.runId)).toBe('completed');
    // 60 KiB of quotes: under read_text's 64 KiB read limit, over its 80 KiB output limit once JSON-escaped.
    const content = '"'.repeat(60 * 1024);
    fs.writeFileSync(path.join(dir, 'data', 'workspaces', 'local', w.sessionId, 'quotes.txt'), content);
    const r = await t.submit('read quotes.txt', {}, w.sessionId);
    expect(await t.waitForTerminal(r.runId)).toBe('completed');
    const events = await t.events(r.runId);
    const completed = of(events, 'tool.call.completed')[0].data;
    expect(completed.truncated).toBe(true);
    const result = completed.result as { marker: string; excerpt: string; artifact: Record<string, unknown> };
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(80 * 1024);
    expect(result.excerpt.length).toBeGreaterThan(1000);
    const created = of(events, 'artifact.created')[0].data;
    expect(result.artifact).toEqual({
      artifact_id: created.artifactId,
      name: created.name,
      media_type: 'application/json',
      size_bytes: created.sizeBytes,
      sha256: created.sha256,
    });
    expect(result.marker).toBe(
      `[truncated: ${created.sizeBytes} bytes exceed the 81920-byte limit; the full result is artifact ${created.artifactId}]`,
    );
    expect(created.source).toBe('tool_result');
    expect(created.expiresAt).not.toBeNull();
    const stored = await t.platform.artifacts.open('local', created.artifactId);
    const chunks: Buffer[] = [];
    for await (const c of stored!.stream) chunks.push(Buffer.from(c));
    const full = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { trust: string; data: { content: string } };
    expect(full.trust).toBe('external_untrusted');
    expect(full.data.content).toBe(content);
  });

  it('passes eval case 21 (artifact creation)', async () => {
    const cases = loadCases(path.join(projectRoot(), 'evals', 'cases'), {
      fixturesDir: path.join(projectRoot(), 'config', 'model-fixtures'),
    }).filter((c) => c.id.startsWith('21'));
    expect(cases).toHaveLength(1);
    await worker.stop(); // the eval runner drives its own worker
    const [result] = await runSuite(t.platform, cases);
    expect({ status: result.status, failures: result.failures }).toEqual({ status: 'passed', failures: [] });
  }, 60_000);
});
