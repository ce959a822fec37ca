import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

/**
 * A real S3-compatible server from npm (s3rver, a devDependency) on a free loopback port, with a
 * bucket created through the AWS SDK. s3rver accepts the access key `S3RVER` / secret `S3RVER` and
 * refuses unknown access keys, which is what the credential tests need.
 */
export interface LocalS3 {
  readonly endpoint: string;
  readonly bucket: string;
  /** A raw SDK client, for tests that reach the bytes behind the store's back. */
  readonly client: S3Client;
  stop(): Promise<void>;
}

export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (opts: Record<string, unknown>) => S3rverInstance;

/** Why s3rver cannot be used here, or null when it can (then tests run; otherwise they skip, saying so). */
export function s3rverUnavailable(): string | null {
  try {
    require.resolve('s3rver');
    return null;
  } catch (e) {
    return `s3rver is not installed (${(e as Error).message.split('\n')[0]}): run npm ci`;
  }
}

export async function startLocalS3(bucket = 'agent-artifacts'): Promise<LocalS3> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only where the tests run
  const S3rver = require('s3rver') as S3rverClass;
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    endpoint,
    bucket,
    client,
    async stop() {
      client.destroy();
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
