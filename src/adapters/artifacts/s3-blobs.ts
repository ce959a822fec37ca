import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { ArtifactStorageError } from '../../domain/artifacts';

/** Where the bucket is (ARTIFACT_STORE=s3; src/config/artifact-settings.ts). */
export interface S3Location {
  readonly bucket: string;
  readonly endpoint: string | null;
  readonly region: string;
  readonly forcePathStyle: boolean;
}

const ignore = (): void => undefined;
const SILENT_SDK_LOGGER = { trace: ignore, debug: ignore, info: ignore, warn: ignore, error: ignore };

/** Multipart above this size; S3 needs parts of at least 5 MiB (except the last). */
const MULTIPART_THRESHOLD = 64 * 1024 * 1024;
const PART_SIZE = 16 * 1024 * 1024;

export interface S3BlobOptions {
  readonly multipartThresholdBytes?: number;
  readonly partSizeBytes?: number;
  /** Explicit credentials (tests); omitted, the SDK's standard chain finds them. Never logged. */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/**
 * The bytes of an S3-compatible bucket, by storage key: upload a local file (one PUT, or a multipart
 * upload for large files, streamed from disk either way), stream an object back, head, delete, list.
 * Every failure becomes an ArtifactStorageError that says what is wrong (no such bucket, credentials
 * refused, endpoint unreachable) without a credential or a raw SDK dump.
 */
export class S3Blobs {
  private readonly client: S3Client;
  private readonly threshold: number;
  private readonly partSize: number;

  constructor(
    readonly location: S3Location,
    opts: S3BlobOptions = {},
  ) {
    // The SDK warns once per process that its 2027 releases need Node 22; the version pinned in
    // package-lock.json supports Node 20, and a warning on every `agent` command helps nobody.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    this.client = new S3Client({
      region: location.region,
      ...(location.endpoint ? { endpoint: location.endpoint } : {}),
      forcePathStyle: location.forcePathStyle,
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
      // Integrity is ours (SHA-256 on every read); the SDK's default CRC trailers are not understood
      // by every S3-compatible server (s3rver, older MinIO and Ceph), so send them only when required.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      // The SDK prints retry notes to the console when given no logger; every failure it could note
      // reaches the caller as an ArtifactStorageError instead, which the platform logs once.
      logger: SILENT_SDK_LOGGER,
    });
    this.threshold = opts.multipartThresholdBytes ?? MULTIPART_THRESHOLD;
    this.partSize = Math.max(opts.partSizeBytes ?? PART_SIZE, 5 * 1024 * 1024);
  }

  /** `s3://bucket` at the endpoint's host (never its user info), for messages. */
  describe(): string {
    const where = this.location.endpoint ? ` at ${hostOf(this.location.endpoint)}` : ` in ${this.location.region}`;
    return `s3://${this.location.bucket}${where}`;
  }

  /** Fails with a clear ArtifactStorageError unless the bucket exists and the credentials may use it. */
  async checkBucket(): Promise<void> {
    await this.attempt('check the bucket', () =>
      this.client.send(new HeadBucketCommand({ Bucket: this.location.bucket })),
    );
  }

  /** Uploads `file` (`size` bytes) as `key`, replacing what is there; returns how many parts it took. */
  async putFile(key: string, file: string, size: number): Promise<number> {
    if (size <= this.threshold) {
      await this.attempt('store an object', () =>
        this.client.send(
          new PutObjectCommand({
            Bucket: this.location.bucket,
            Key: key,
            Body: fs.createReadStream(file),
            ContentLength: size,
          }),
        ),
      );
      return 1;
    }
    return this.putMultipart(key, file, size);
  }

  /** Stores a small in-memory object (the doctor's probe). */
  async putBytes(key: string, bytes: Uint8Array): Promise<void> {
    await this.attempt('store an object', () =>
      this.client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key: key, Body: bytes })),
    );
  }

  /** The object's size, or undefined when there is none. */
  async size(key: string): Promise<number | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (e) {
      if (isNotFound(e) && !isNoSuchBucket(e)) return undefined;
      throw this.failure('read an object', e);
    }
  }

  /** The object's bytes as a stream, or undefined when there is none. */
  async read(key: string): Promise<Readable | undefined> {
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: key }));
      return got.Body as Readable;
    } catch (e) {
      if (isNotFound(e) && !isNoSuchBucket(e)) return undefined;
      throw this.failure('read an object', e);
    }
  }

  async delete(key: string): Promise<void> {
    await this.attempt('delete an object', () =>
      this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: key })),
    );
  }

  /** Every object under `prefix`, page by page. */
  async *list(prefix: string): AsyncIterable<{ key: string; lastModified: number }> {
    let token: string | undefined;
    do {
      const page = await this.attempt('list objects', () =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: prefix, ContinuationToken: token }),
        ),
      );
      for (const o of page.Contents ?? [])
        if (o.Key) yield { key: o.Key, lastModified: o.LastModified?.getTime() ?? Date.now() };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  close(): void {
    this.client.destroy();
  }

  private async putMultipart(key: string, file: string, size: number): Promise<number> {
    const Bucket = this.location.bucket;
    const created = await this.attempt('start a multipart upload', () =>
      this.client.send(new CreateMultipartUploadCommand({ Bucket, Key: key })),
    );
    const UploadId = created.UploadId;
    try {
      const parts: { ETag: string; PartNumber: number }[] = [];
      for (let start = 0, n = 1; start < size; start += this.partSize, n++) {
        const end = Math.min(start + this.partSize, size);
        const body = fs.createReadStream(file, { start, end: end - 1 });
        const part = await this.attempt('upload a part', () =>
          this.client.send(
            new UploadPartCommand({
              Bucket,
              Key: key,
              UploadId,
              PartNumber: n,
              Body: body,
              ContentLength: end - start,
            }),
          ),
        );
        parts.push({ ETag: part.ETag ?? '', PartNumber: n });
      }
      await this.attempt('complete a multipart upload', () =>
        this.client.send(
          new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }),
        ),
      );
      return parts.length;
    } catch (e) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId })).catch(() => undefined);
      throw e;
    }
  }

  /** Runs one SDK call, turning its failure into a clear ArtifactStorageError. */
  private async attempt<T>(action: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      throw this.failure(action, e);
    }
  }

  /** A clear, credential-free error for what went wrong talking to the store. */
  private failure(action: string, e: unknown): ArtifactStorageError {
    if (e instanceof ArtifactStorageError) return e;
    const name = errorName(e);
    const status = statusOf(e);
    const where = this.describe();
    if (isNoSuchBucket(e) || (action === 'check the bucket' && status === 404))
      return new ArtifactStorageError(
        `the artifact store ${where} has no such bucket: create it, or set S3_BUCKET to an existing one`,
        { reason: 'no_such_bucket' },
      );
    if (name === 'CredentialsProviderError')
      return new ArtifactStorageError(
        `no credentials for the artifact store ${where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)`,
        { reason: 'no_credentials' },
      );
    if (CREDENTIAL_ERRORS.has(name) || status === 403)
      return new ArtifactStorageError(
        `the artifact store ${where} refused the credentials (${name === 'Unknown' ? `HTTP ${status}` : name}): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket policy`,
        { reason: 'credentials_refused' },
      );
    const code = (e as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code))
      return new ArtifactStorageError(`the artifact store ${where} cannot be reached (${code}): check S3_ENDPOINT`, {
        reason: 'unreachable',
      });
    return new ArtifactStorageError(
      `the artifact store ${where} could not ${action}: ${name}${status ? ` (HTTP ${status})` : ''}`,
      { reason: 'storage_error' },
    );
  }
}

const CREDENTIAL_ERRORS = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'ExpiredToken',
  'InvalidToken',
  'AuthorizationHeaderMalformed',
]);

function errorName(e: unknown): string {
  const x = e as { name?: unknown; Code?: unknown } | null;
  if (typeof x?.Code === 'string') return x.Code;
  return typeof x?.name === 'string' ? x.name : 'unknown error';
}

function statusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function isNoSuchBucket(e: unknown): boolean {
  return errorName(e) === 'NoSuchBucket';
}

function isNotFound(e: unknown): boolean {
  const name = errorName(e);
  return name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchBucket' || statusOf(e) === 404;
}

function hostOf(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return 'the configured endpoint';
  }
}
