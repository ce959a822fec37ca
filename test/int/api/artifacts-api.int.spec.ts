import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { storageKeyFor } from '../../../src/adapters/artifacts/fs-artifact-store';
import { PREVERIFY_MAX_BYTES } from '../../../src/api/artifacts.controller';
import { addTokenToFile } from '../../../src/composition/http';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness } from './api-harness';

let tdb: TestDb;
let h: ApiHarness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-artifacts-api-'));
const dataDir = path.join(dir, 'data');
const artifactDir = path.join(dir, 'artifacts');
const file = path.join(dir, 'tokens.json');
const tokens: Record<string, string> = {};
const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

async function waitTerminal(runId: string): Promise<string> {
  return h.t.waitForTerminal(runId, 20_000);
}

async function say(sessionId: string, text: string, who = 'a'): Promise<string> {
  const m = await call(h.base, 'POST', `/v1/sessions/${sessionId}/messages`, {
    body: { content: [{ type: 'text', text }] },
    headers: as(who),
  });
  expect(m.status).toBe(202);
  expect(await waitTerminal(m.body.run_id)).toBe('completed');
  return m.body.run_id;
}

async function download(url: string, who: string): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const r = await fetch(`${h.base}${url}`, { headers: as(who) });
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

let sessionId: string;
let exportRun: string;

beforeAll(async () => {
  tokens.a = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['user'] }, []);
  tokens.a2 = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alan', scopes: ['user'] }, []);
  tokens.b = addTokenToFile(file, { tenantId: 'tenant-b', principalId: 'bob', scopes: ['user'] }, []);
  tokens.noRuns = addTokenToFile(file, { tenantId: 'tenant-a', principalId: 'alice', scopes: ['sessions.read'] }, []);
  tdb = await createTestDb();
  h = await startApi(tdb.url, { authMode: 'token', authTokensFile: file, dataDir, artifactDir }, { worker: true });
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {}, headers: as('a') });
  sessionId = s.body.id;
  await say(sessionId, 'write the quarterly numbers are up to report.txt');
  exportRun = await say(sessionId, 'export report.txt');
});
afterAll(async () => {
  await h?.close();
  await tdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('artifact routes over HTTP', () => {
  it('exports a workspace file through the demo model and downloads it with the same SHA-256', async () => {
    const onDisk = fs.readFileSync(path.join(dataDir, 'workspaces', 'tenant-a', sessionId, 'report.txt'));
    expect(onDisk.toString()).toBe('the quarterly numbers are up');

    const list = await call(h.base, 'GET', `/v1/runs/${exportRun}/artifacts`, { headers: as('a') });
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    const item = list.body.items[0] as { id: string; content_url: string };
    expect(item).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'report.txt',
      media_type: 'text/plain; charset=utf-8',
      size_bytes: onDisk.length,
      sha256: sha(onDisk),
      source: 'artifact.export',
      run_id: exportRun,
      session_id: sessionId,
      created_at: expect.any(String),
      expires_at: null,
      content_url: `/v1/artifacts/${item.id}/content`,
    });
    const run = await call(h.base, 'GET', `/v1/runs/${exportRun}`, { headers: as('a') });
    expect(run.body.final_text).toBe(
      `Exported report.txt as artifact ${item.id} (${onDisk.length} bytes, sha256 ${sha(onDisk)}).`,
    );

    const meta = await call(h.base, 'GET', `/v1/artifacts/${item.id}`, { headers: as('a') });
    expect(meta.status).toBe(200);
    expect(meta.body).toEqual(item);
    expect(JSON.stringify(meta.body)).not.toContain(artifactDir);
    expect(JSON.stringify(meta.body)).not.toContain('sha256/');

    const got = await download(item.content_url, 'a');
    expect(got.status).toBe(200);
    expect(sha(got.body)).toBe(sha(onDisk));
    expect(got.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(got.headers.get('content-length')).toBe(String(onDisk.length));
    expect(got.headers.get('etag')).toBe(`"sha256-${sha(onDisk)}"`);
    expect(got.headers.get('digest')).toBe(`sha-256=${createHash('sha256').update(onDisk).digest('base64')}`);
    expect(got.headers.get('content-disposition')).toBe(
      `attachment; filename="report.txt"; filename*=UTF-8''report.txt`,
    );
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');

    const again = await fetch(`${h.base}${item.content_url}`, {
      headers: { ...as('a'), 'if-none-match': `"sha256-${sha(onDisk)}"` },
    });
    expect(again.status).toBe(304);

    // The run's timeline records it, without any storage location.
    const events = await h.t.platform.db.query<{ data: Record<string, unknown> }>(
      `SELECT payload AS data FROM events WHERE run_id = $1 AND event_type = 'artifact.created'`,
      [exportRun],
    );
    expect(events.rows.map((r) => r.data)).toEqual([
      {
        artifactId: item.id,
        name: 'report.txt',
        mediaType: 'text/plain; charset=utf-8',
        sha256: sha(onDisk),
        sizeBytes: onDisk.length,
        source: 'artifact.export',
        expiresAt: null,
      },
    ]);
  });

  it('answers 404 to another tenant and another principal, 400 to a malformed id, 403 without runs.read', async () => {
    const id = String(
      (await call(h.base, 'GET', `/v1/runs/${exportRun}/artifacts`, { headers: as('a') })).body.items[0].id,
    );
    for (const who of ['b', 'a2'])
      for (const url of [`/v1/artifacts/${id}`, `/v1/artifacts/${id}/content`, `/v1/runs/${exportRun}/artifacts`]) {
        const r = await call(h.base, 'GET', url, { headers: as(who) });
        expect({ who, url, status: r.status, code: r.body?.error?.code }).toEqual({
          who,
          url,
          status: 404,
          code: 'not_found',
        });
      }
    const unknown = await call(h.base, 'GET', '/v1/artifacts/00000000-0000-4000-8000-000000000000', {
      headers: as('a'),
    });
    expect(unknown.body.error).toMatchObject({
      code: 'not_found',
      message: 'artifact 00000000-0000-4000-8000-000000000000 not found',
    });
    const bad = await call(h.base, 'GET', '/v1/artifacts/..%2F..%2Fetc%2Fpasswd/content', { headers: as('a') });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'validation_error', message: 'artifact_id must be a UUID' });
    const scope = await call(h.base, 'GET', `/v1/artifacts/${id}`, { headers: as('noRuns') });
    expect(scope.status).toBe(403);
    expect(scope.body.error.details).toEqual({ required_scope: 'runs.read' });
    expect((await call(h.base, 'GET', `/v1/artifacts/${id}`, { headers: {} })).status).toBe(401);
  });

  it('refuses a tampered small file with an artifact_integrity_error envelope before sending any byte', async () => {
    const meta = await h.t.platform.artifacts.put(
      { tenantId: 'tenant-a', principalId: 'alice', name: 'small.txt', mediaType: 'text/plain', source: 'test' },
      'small and intact',
    );
    fs.writeFileSync(path.join(artifactDir, storageKeyFor(meta.sha256)), 'small and tamperd');
    const r = await call(h.base, 'GET', `/v1/artifacts/${meta.id}/content`, { headers: as('a') });
    expect(r.status).toBe(500);
    expect(r.body.error.code).toBe('artifact_integrity_error');
    expect(r.body.error.message).toBe(
      `artifact ${meta.id} failed integrity verification: the stored content has more than the recorded 16 bytes`,
    );
    expect(r.body.error.message).not.toContain(artifactDir);
  });

  it('streams a large file verified on the way out, and aborts the connection when it was tampered with', async () => {
    const big = randomBytes(PREVERIFY_MAX_BYTES + 1024 * 1024);
    const meta = await h.t.platform.artifacts.put(
      {
        tenantId: 'tenant-a',
        principalId: 'alice',
        name: 'big.bin',
        mediaType: 'application/octet-stream',
        source: 'test',
      },
      big,
    );
    const ok = await download(`/v1/artifacts/${meta.id}/content`, 'a');
    expect(ok.status).toBe(200);
    expect(ok.body.length).toBe(big.length);
    expect(sha(ok.body)).toBe(meta.sha256);

    const stored = path.join(artifactDir, storageKeyFor(meta.sha256));
    const fd = fs.openSync(stored, 'r+');
    fs.writeSync(fd, Buffer.from([big[big.length - 10] ^ 0xff]), 0, 1, big.length - 10);
    fs.closeSync(fd);
    const r = await fetch(`${h.base}/v1/artifacts/${meta.id}/content`, { headers: as('a') });
    expect(r.status).toBe(200); // headers went out before the end of the file was read
    expect(r.headers.get('content-length')).toBe(String(big.length));
    await expect(r.arrayBuffer()).rejects.toThrow();
  });
});
