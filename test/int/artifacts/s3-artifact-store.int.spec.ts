import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { storageKeyFor } from '../../../src/adapters/artifacts/artifact-records';
import { S3ArtifactStore } from '../../../src/adapters/artifacts/s3-artifact-store';
import { S3Blobs, type S3Location } from '../../../src/adapters/artifacts/s3-blobs';
import { runDoctor } from '../../../src/composition/doctor';
import { loadSettings } from '../../../src/config/settings';
import { ArtifactStorageError } from '../../../src/domain/artifacts';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { ArtifactStore } from '../../../src/ports/artifact-store';
import { artifactStoreContract, base, chunked, readAll, sha } from '../../support/artifact-store-contract';
import { createTestDb, type TestDb } from '../../support/test-db';
import { s3rverUnavailable, S3RVER_CREDENTIALS, startLocalS3, type LocalS3 } from '../../support/s3-server';
import { call, startApi, type ApiHarness } from '../api/api-harness';

/**
 * The S3 artifact store (ADR 0045) against a real S3-compatible server (s3rver from npm) over HTTP,
 * wired by configuration (ARTIFACT_STORE=s3, S3_*; credentials from the SDK's environment chain):
 * the same contract as the filesystem store, then what only S3 has (multipart, bucket and credential
 * errors, orphan listing), the HTTP download and `agent doctor`.
 */
const unavailable = s3rverUnavailable();
if (unavailable) process.stderr.write(`skipping the S3 artifact store tests: ${unavailable}\n`);
const d = unavailable ? describe.skip : describe;

let tdb: TestDb;
let s3: LocalS3;
let h: ApiHarness;
let store: ArtifactStore;
let location: S3Location;
const savedEnv = { ...process.env };

async function objectBytes(key: string): Promise<Buffer> {
  const got = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

async function keys(): Promise<string[]> {
  const page = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'sha256/' }));
  return (page.Contents ?? []).map((o) => o.Key!).sort();
}

beforeAll(async () => {
  if (unavailable) return;
  s3 = await startLocalS3();
  location = { bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true };
  // The SDK's standard chain: the store is given no credentials, only the environment has them.
  process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
  tdb = await createTestDb();
  h = await startApi(tdb.url, { artifactStore: { kind: 's3', ...location } });
  store = h.t.platform.artifacts;
}, 60_000);
afterAll(async () => {
  await h?.close();
  await tdb?.drop();
  await s3?.stop();
  process.env = savedEnv;
});

d('the S3 artifact store (ARTIFACT_STORE=s3, against s3rver)', () => {
  it('is what ARTIFACT_STORE=s3 with S3_BUCKET, S3_ENDPOINT, S3_REGION and S3_FORCE_PATH_STYLE configures', () => {
    const env = {
      ARTIFACT_STORE: 's3',
      S3_BUCKET: 'b-1',
      S3_ENDPOINT: 'http://s3.local:9000',
      S3_FORCE_PATH_STYLE: '1',
    };
    expect(loadSettings(env).artifactStore).toEqual({
      kind: 's3',
      bucket: 'b-1',
      endpoint: 'http://s3.local:9000',
      region: 'us-east-1',
      forcePathStyle: true,
    });
    expect(loadSettings({}).artifactStore).toEqual({ kind: 'fs' });
    expect(() => loadSettings({ ARTIFACT_STORE: 's3' })).toThrow(
      'ARTIFACT_STORE=s3 needs S3_BUCKET (an existing bucket)',
    );
    expect(() => loadSettings({ ARTIFACT_STORE: 'gcs' })).toThrow('ARTIFACT_STORE must be "fs" or "s3", got "gcs"');
    expect(() => loadSettings({ ARTIFACT_STORE: 's3', S3_BUCKET: 'Bad_Bucket' })).toThrow(/is not a bucket name/);
    expect(store).toBeInstanceOf(S3ArtifactStore);
  });

  artifactStoreContract(() => ({
    t: h.t,
    store,
    blobKeys: keys,
    writeBlob: async (key, bytes) => {
      await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: bytes }));
    },
    readBlob: objectBytes,
    removeBlob: async (key) => {
      await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));
    },
  }));

  it('uploads a large artifact in parts, streamed from its spool file, and reads it back verified', async () => {
    const blobs = new S3Blobs(location, { multipartThresholdBytes: 6 * 1024 * 1024, partSizeBytes: 5 * 1024 * 1024 });
    const big = new S3ArtifactStore({ ...h.t.platform, blobs, events: undefined });
    try {
      const bytes = randomBytes(11 * 1024 * 1024 + 5);
      const meta = await big.put({ ...base, name: 'big.bin' }, chunked(bytes, 256 * 1024));
      const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: storageKeyFor(meta.sha256) }));
      expect(head.ContentLength).toBe(bytes.length);
      // The same upload path, asked directly: 11 MiB in 5 MiB parts is 3 parts; below the threshold, 1 PUT.
      const file = path.join(os.tmpdir(), `agent-s3-parts-${process.pid}`);
      fs.writeFileSync(file, bytes);
      try {
        expect(await blobs.putFile(storageKeyFor(meta.sha256), file, bytes.length)).toBe(3);
        fs.writeFileSync(file, 'small');
        expect(await blobs.putFile(storageKeyFor(sha('small')), file, 5)).toBe(1);
      } finally {
        fs.rmSync(file, { force: true });
      }
      expect(sha(await readAll((await store.open('tenant-a', meta.id))!.stream))).toBe(sha(bytes));
    } finally {
      blobs.close();
    }
  });

  it('serves an S3 artifact over HTTP with its digest, like a filesystem one', async () => {
    const bytes = Buffer.from('downloaded from the bucket\n'.repeat(100));
    const meta = await store.put({ ...base, tenantId: LOCAL_PRINCIPAL.tenantId, name: 'notes.txt' }, bytes);
    const r = await fetch(`${h.base}/v1/artifacts/${meta.id}/content`);
    expect(r.status).toBe(200);
    expect(r.headers.get('digest')).toBe(`sha-256=${Buffer.from(meta.sha256, 'hex').toString('base64')}`);
    expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('says plainly when the bucket does not exist, writes no row, and the API answers 503 in the envelope', async () => {
    const blobs = new S3Blobs({ ...location, bucket: 'no-such-bucket' });
    const missing = new S3ArtifactStore({ ...h.t.platform, blobs });
    const rows = async () => (await h.t.platform.db.query('SELECT 1 FROM artifacts')).rowCount;
    const before = await rows();
    try {
      const err = await missing.put(base, 'x').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ArtifactStorageError);
      expect((err as Error).message).toBe(
        `the artifact store s3://no-such-bucket at ${new URL(s3.endpoint).host} has no such bucket: create it, or set S3_BUCKET to an existing one`,
      );
      expect(await rows()).toBe(before);
    } finally {
      blobs.close();
    }
    // Through the API: the bytes of a recorded artifact went missing with their bucket.
    const meta = await store.put({ ...base, tenantId: LOCAL_PRINCIPAL.tenantId, name: 'lost.txt' }, 'lost');
    const other = await startApi(tdb.url, { artifactStore: { kind: 's3', ...location, bucket: 'gone-bucket' } });
    try {
      const res = await call(other.base, 'GET', `/v1/artifacts/${meta.id}/content`);
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ code: 'artifact_storage_error' });
      expect(res.body.error.message).toMatch(/s3:\/\/gone-bucket .* has no such bucket/);
    } finally {
      await other.close();
    }
  });

  it('says plainly when the credentials are refused, and never shows the secret', async () => {
    const secret = 'not-the-secret-4b1d';
    const blobs = new S3Blobs(location, { credentials: { accessKeyId: 'NOT-A-KEY', secretAccessKey: secret } });
    try {
      const err = await new S3ArtifactStore({ ...h.t.platform, blobs }).put(base, 'x').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ArtifactStorageError);
      expect((err as Error).message).toMatch(
        /^the artifact store s3:\/\/agent-artifacts at 127\.0\.0\.1:\d+ refused the credentials \(InvalidAccessKeyId\)/,
      );
      expect(JSON.stringify({ m: (err as Error).message, d: (err as ArtifactStorageError).details })).not.toContain(
        secret,
      );
    } finally {
      blobs.close();
    }
  });

  it('sweeps orphaned objects past the grace period and keeps referenced ones', async () => {
    const orphanKey = storageKeyFor(sha('an orphan object'));
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: orphanKey, Body: 'an orphan object' }));
    const kept = await store.put({ ...base, name: 'kept.txt' }, 'kept in the bucket');
    const blobs = new S3Blobs(location);
    try {
      const sweeper = new S3ArtifactStore({ ...h.t.platform, blobs, orphanGraceMs: 0 });
      await sweeper.sweepExpired(new Date(Date.now() + 2000).toISOString());
      const left = await keys();
      expect(left).not.toContain(orphanKey);
      expect(left).toContain(storageKeyFor(kept.sha256));
    } finally {
      blobs.close();
    }
  });

  it('is checked by agent doctor: ✓ when usable, ✗ with the fix when the bucket is missing or the key refused', async () => {
    const settings = { ...loadSettings({}), artifactStore: { kind: 's3' as const, ...location } };
    const find = async (s: typeof settings) => (await runDoctor(s)).find((c) => c.name === 'artifact store');
    expect(await find(settings)).toMatchObject({ ok: true, detail: expect.stringMatching(/write and delete allowed/) });
    const noBucket = await find({ ...settings, artifactStore: { ...settings.artifactStore, bucket: 'missing-one' } });
    expect(noBucket).toMatchObject({ ok: false, detail: expect.stringMatching(/has no such bucket/) });
    expect(noBucket?.fix).toMatch(/AWS_ACCESS_KEY_ID/);
    process.env.AWS_ACCESS_KEY_ID = 'NOT-A-KEY';
    try {
      const refused = await find(settings);
      expect(refused).toMatchObject({ ok: false, detail: expect.stringMatching(/refused the credentials/) });
      expect(JSON.stringify(refused)).not.toContain(S3RVER_CREDENTIALS.secretAccessKey);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
    }
  });
});
