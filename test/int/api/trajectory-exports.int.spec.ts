import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createTestDb, type TestDb } from '../../support/test-db';
import { call, startApi, type ApiHarness, type WireBody } from './api-harness';

/** Export jobs and consent over real HTTP and the real database (issue 9 items 4 and 6). */
let tdb: TestDb;
let h: ApiHarness;

beforeAll(async () => {
  tdb = await createTestDb();
  h = await startApi(tdb.url, {}, { worker: true });
});
afterAll(async () => {
  await h.close();
  await tdb.drop();
});

async function calculatorRun(): Promise<string> {
  const s = await call(h.base, 'POST', '/v1/sessions', { body: {} });
  const m = await call(h.base, 'POST', `/v1/sessions/${s.body.id}/messages`, {
    body: { content: [{ type: 'text', text: 'What is 17 multiplied by 23?' }] },
  });
  expect(m.status).toBe(202);
  expect(await h.t.waitForTerminal(m.body.run_id)).toBe('completed');
  return m.body.run_id;
}

async function finished(id: string): Promise<WireBody> {
  const end = Date.now() + 20_000;
  for (;;) {
    const r = await call(h.base, 'GET', `/v1/exports/${id}`);
    expect(r.status).toBe(200);
    if (!['queued', 'running'].includes(r.body.status)) return r.body;
    if (Date.now() > end) throw new Error(`export ${id} still ${r.body.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe('POST /v1/exports and consent', () => {
  it('reports a job whose API process died as failed (interrupted) once its heartbeat is a minute old; a job with a live heartbeat stays running', async () => {
    const c = new Client({ connectionString: tdb.url });
    await c.connect();
    try {
      const [dead, alive, neverStarted] = [randomUUID(), randomUUID(), randomUUID()];
      await c.query(
        `INSERT INTO trajectory_exports (id, tenant_id, requested_by, filters, status, created_at, heartbeat_at) VALUES
           ($1, 'local', 'local-user', '{}', 'running', now() - interval '10 minutes', now() - interval '2 minutes'),
           ($2, 'local', 'local-user', '{}', 'running', now() - interval '10 minutes', now()),
           ($3, 'local', 'local-user', '{}', 'queued', now() - interval '10 minutes', NULL)`,
        [dead, alive, neverStarted],
      );
      const d = await call(h.base, 'GET', `/v1/exports/${dead}`);
      expect(d.status).toBe(200);
      expect(d.body).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
      expect(d.body.finished_at).toEqual(expect.any(String));
      expect((await call(h.base, 'GET', `/v1/exports/${neverStarted}`)).body).toMatchObject({
        status: 'failed',
        error: { code: 'interrupted' },
      });
      expect((await call(h.base, 'GET', `/v1/exports/${alive}`)).body.status).toBe('running');
      const rows = await c.query<{ id: string; status: string }>(
        `SELECT id, status FROM trajectory_exports WHERE id = ANY($1::uuid[]) ORDER BY status`,
        [[dead, alive, neverStarted]],
      );
      expect(rows.rows.map((r) => r.status)).toEqual(['failed', 'failed', 'running']);
    } finally {
      await c.end();
    }
  });

  it('exports consenting runs into an artifact, and withdrawing consent deletes that export', async () => {
    const before = await calculatorRun(); // no consent recorded yet: skipped
    const granted = await call(h.base, 'PUT', '/v1/consent/trajectory');
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ principal_id: 'local-user', status: 'granted', version: 1 });
    const runId = await calculatorRun();

    const created = await call(h.base, 'POST', '/v1/exports', { body: { status: 'completed' } });
    expect(created.status).toBe(202);
    expect(['queued', 'running']).toContain(created.body.status);
    const job = await finished(created.body.id);
    expect(job.status).toBe('succeeded');
    expect(job.summary).toMatchObject({ exported: 1, skipped_no_consent: 1, succeeded: 1, failed: 0 });

    const content = await fetch(`${h.base}${String(job.content_url)}`);
    expect(content.status).toBe(200);
    const lines = (await content.text()).split('\n').filter((l) => l !== '');
    expect(lines.map((l) => (JSON.parse(l) as { run_id: string }).run_id)).toEqual([runId]);
    expect(lines.join('\n')).not.toContain(before);

    const withdrawn = await call(h.base, 'DELETE', '/v1/consent/trajectory');
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body).toMatchObject({ status: 'withdrawn', version: 2, exports_deleted: 1 });
    const after = await call(h.base, 'GET', `/v1/exports/${created.body.id}`);
    expect(after.body).toMatchObject({ status: 'deleted', artifact_id: null });
    expect((await fetch(`${h.base}${String(job.content_url)}`)).status).toBe(404);
    const rows = await h.t.platform.db.query(`SELECT 1 FROM artifacts WHERE id = $1`, [job.artifact_id]);
    expect(rows.rows).toHaveLength(0);

    // Nothing of the principal is exported any more, even runs stamped while consent was granted.
    const again = await finished((await call(h.base, 'POST', '/v1/exports', { body: {} })).body.id);
    expect(again.summary).toMatchObject({ exported: 0, skipped_no_consent: 2 });
  });

  it('lets an admin record another principal’s consent', async () => {
    const r = await call(h.base, 'PUT', '/v1/consent/trajectory/principals/bob');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ principal_id: 'bob', status: 'granted', changed_by: 'admin:local-user' });
    const g = await call(h.base, 'GET', '/v1/consent/trajectory/principals/bob');
    expect(g.body.status).toBe('granted');
    const d = await call(h.base, 'DELETE', '/v1/consent/trajectory/principals/bob');
    expect(d.body).toMatchObject({ status: 'withdrawn', exports_deleted: 0 });
  });

  it('refuses bad input in the error envelope and records no export', async () => {
    const count = async () =>
      Number(
        (await h.t.platform.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM trajectory_exports`)).rows[0].n,
      );
    const n = await count();
    const unknown = await call(h.base, 'POST', '/v1/exports', {
      body: { run_id: '00000000-0000-4000-8000-000000000000' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'not_found' });
    expect(unknown.body.error.message).toContain('run 00000000-0000-4000-8000-000000000000 not found');
    const cursor = await call(h.base, 'POST', '/v1/exports', { body: { cursor: 'garbage' } });
    expect(cursor.status).toBe(400);
    expect(cursor.body.error.message).toContain('export cursor is not valid');
    const status = await call(h.base, 'POST', '/v1/exports', { body: { status: 'maybe' } });
    expect(status.status).toBe(400);
    const extra = await call(h.base, 'POST', '/v1/exports', { body: { tenant_id: 'someone-else' } });
    expect(extra.status).toBe(400);
    expect(await count()).toBe(n);
    const missing = await call(h.base, 'GET', '/v1/exports/00000000-0000-4000-8000-000000000000');
    expect(missing.status).toBe(404);
  });
});
