import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { migrateToLatest } from '../../../src/adapters/postgres/connect';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { ensureBuilt, startAgent, waitFor } from '../../support/processes';
import { haveDebianPostgres, startDebianPostgres, type DebianPostgres } from '../../support/debian-postgres';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { s3rverUnavailable, S3RVER_CREDENTIALS, startLocalS3 } from '../../support/s3-server';

/**
 * The restore rehearsal (docs/operations/ha.md): a database with runs, an approval and artifacts is
 * backed up with `agent backup create` (Debian's pg_dump 15 against PostgreSQL 15), restored into an
 * empty database with `agent backup restore`, and `agent projections rebuild --verify` finds 0
 * differences; every artifact's bytes hash to their recorded SHA-256.
 */
const d = haveDebianPostgres('the backup rehearsal') ? describe : describe.skip;

let pg: DebianPostgres;
let t: TestPlatform;
let dir: string;

beforeAll(async () => {
  if (!haveDebianPostgres('the backup rehearsal')) return;
  ensureBuilt();
  pg = await startDebianPostgres();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-backup-test-'));
}, 120_000);
afterAll(async () => {
  await t?.close();
  await pg?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function sql(url: string, text: string): Promise<Record<string, unknown>[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}

/** Runs `agent <args>` to its end; its exit code and output. */
async function agent(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const p = startAgent(args, env);
  const code = await p.exited;
  return { code, out: p.output() };
}

d('agent backup create → restore → projections rebuild --verify', () => {
  it('restores runs, an approval and artifacts into an empty database with 0 differences and verified artifacts', async () => {
    const source = pg.url('source');
    await sql(pg.url('postgres'), 'CREATE DATABASE source');
    await sql(pg.url('postgres'), 'CREATE DATABASE target');
    await migrateToLatest(source);
    const sourceArtifacts = path.join(dir, 'artifacts-source');
    t = await createTestPlatform(source, { artifactDir: sourceArtifacts });
    const worker = t.platform.createWorker({ pollIntervalMs: 200 });
    await worker.start();
    const runs = [];
    for (const q of ['What is 17 multiplied by 23?', 'What is 12 plus 30?']) runs.push(await t.submit(q));
    const approvalRun = await t.submit('send hello to ops');
    for (const r of runs) expect(await t.waitForTerminal(r.runId, 60_000)).toBe('completed');
    await waitFor(
      'the approval request',
      async () => (await t.platform.runs.get(approvalRun.runId, null))?.status === 'waiting_for_approval',
      60_000,
    );
    for (const [i, r] of runs.entries())
      await t.platform.artifacts.put(
        {
          tenantId: LOCAL_PRINCIPAL.tenantId,
          runId: r.runId,
          sessionId: r.sessionId,
          name: `note-${i}.txt`,
          mediaType: 'text/plain',
          source: 'test',
        },
        `artifact ${i} of the rehearsal\n`.repeat(100 + i),
      );
    await worker.stop();

    const env = { AGENT_BACKUP_DIR: path.join(dir, 'backups'), AGENT_PG_BIN_DIR: '/usr/lib/postgresql/15/bin' };
    const created = await agent(['backup', 'create'], {
      ...env,
      DATABASE_URL: source,
      AGENT_ARTIFACT_DIR: sourceArtifacts,
    });
    expect(created).toMatchObject({ code: 0 });
    const id = /^backup (\S+):/m.exec(created.out)?.[1] ?? '';
    expect(created.out).toMatch(/2 artifacts/);
    expect((await agent(['backup', 'list'], env)).out).toContain(id);

    const target = pg.url('target');
    const targetArtifacts = path.join(dir, 'artifacts-target');
    const restored = await agent(['backup', 'restore', id], {
      ...env,
      DATABASE_URL: target,
      AGENT_ARTIFACT_DIR: targetArtifacts,
    });
    expect(restored.out).toMatch(/2 artifacts verified by SHA-256/);
    expect(restored.code).toBe(0);
    // A second restore into the now non-empty database is refused and changes nothing.
    const again = await agent(['backup', 'restore', id], {
      ...env,
      DATABASE_URL: target,
      AGENT_ARTIFACT_DIR: targetArtifacts,
    });
    expect(again.code).toBe(4);
    expect(again.out).toMatch(/restore needs an empty database/);

    const verify = await agent(['projections', 'rebuild', '--verify'], { DATABASE_URL: target });
    expect(verify.out).not.toMatch(/difference/);
    expect(verify.code).toBe(0);
    const count = async (url: string, table: string) =>
      (await sql(url, `SELECT count(*)::int AS n FROM ${table}`))[0].n;
    for (const table of ['events', 'runs', 'approvals', 'artifacts'])
      expect([table, await count(target, table)]).toEqual([table, await count(source, table)]);
    expect(await count(target, 'approvals')).toBe(1);
    const rows = (await sql(target, 'SELECT storage_key, sha256 FROM artifacts')) as {
      storage_key: string;
      sha256: string;
    }[];
    expect(rows).toHaveLength(2);
    for (const r of rows)
      expect(
        createHash('sha256')
          .update(fs.readFileSync(path.join(targetArtifacts, r.storage_key)))
          .digest('hex'),
      ).toBe(r.sha256);
  }, 300_000);
});

const s3Missing = s3rverUnavailable();
if (s3Missing) process.stderr.write(`skipping the S3 backup rehearsal: ${s3Missing}\n`);
const ds3 = haveDebianPostgres('the S3 backup rehearsal') && !s3Missing ? describe : describe.skip;

ds3('agent backup with ARTIFACT_STORE=s3 (ADR 0045)', () => {
  it('backs up the artifacts from the bucket and restores them into another bucket, verified by SHA-256', async () => {
    const s3 = await startLocalS3('agent-artifacts');
    try {
      await s3.client.send(new CreateBucketCommand({ Bucket: 'agent-artifacts-restored' }));
      const source = pg.url('source_s3');
      await sql(pg.url('postgres'), 'CREATE DATABASE source_s3');
      await sql(pg.url('postgres'), 'CREATE DATABASE target_s3');
      await migrateToLatest(source);
      const location = { endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true };
      process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
      const p = await createTestPlatform(source, { artifactStore: { kind: 's3', bucket: s3.bucket, ...location } });
      try {
        const r = await p.submit('hello');
        for (const i of [0, 1, 2])
          await p.platform.artifacts.put(
            {
              tenantId: LOCAL_PRINCIPAL.tenantId,
              runId: r.runId,
              sessionId: r.sessionId,
              name: `s3-${i}.txt`,
              mediaType: 'text/plain',
              source: 'test',
            },
            `in the bucket ${i}\n`.repeat(50 + i),
          );
      } finally {
        await p.close();
      }
      const env = {
        AGENT_BACKUP_DIR: path.join(dir, 'backups-s3'),
        AGENT_PG_BIN_DIR: '/usr/lib/postgresql/15/bin',
        ARTIFACT_STORE: 's3',
        S3_ENDPOINT: s3.endpoint,
        S3_FORCE_PATH_STYLE: '1',
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      };
      const created = await agent(['backup', 'create'], { ...env, DATABASE_URL: source, S3_BUCKET: s3.bucket });
      expect(created.out).toMatch(/3 artifacts/);
      expect(created.code).toBe(0);
      const id = /^backup (\S+):/m.exec(created.out)?.[1] ?? '';
      const target = pg.url('target_s3');
      const restored = await agent(['backup', 'restore', id], {
        ...env,
        DATABASE_URL: target,
        S3_BUCKET: 'agent-artifacts-restored',
      });
      expect(restored.out).toMatch(/3 artifacts verified by SHA-256/);
      expect(restored.code).toBe(0);
      const rows = (await sql(target, 'SELECT storage_key, sha256 FROM artifacts')) as {
        storage_key: string;
        sha256: string;
      }[];
      expect(rows).toHaveLength(3);
      const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'agent-artifacts-restored' }));
      expect((listed.Contents ?? []).map((o) => o.Key).sort()).toEqual(rows.map((r) => r.storage_key).sort());
      for (const r of rows) {
        const got = await s3.client.send(
          new GetObjectCommand({ Bucket: 'agent-artifacts-restored', Key: r.storage_key }),
        );
        const bytes = Buffer.from(await got.Body!.transformToByteArray());
        expect(createHash('sha256').update(bytes).digest('hex')).toBe(r.sha256);
      }
    } finally {
      await s3.stop();
    }
  }, 300_000);
});
