import { ConfigurationError } from '../domain/errors';

/**
 * Where artifact bytes live (ARTIFACT_STORE; ADR 0045). `fs`: a directory (`AGENT_ARTIFACT_DIR`, on a
 * shared mount when several hosts run). `s3`: a bucket of an S3-compatible store. Metadata stays in
 * PostgreSQL either way. Credentials are not settings: the AWS SDK's standard chain finds them
 * (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role), and they are never logged.
 */
export type ArtifactStoreSettings =
  | { readonly kind: 'fs' }
  | {
      readonly kind: 's3';
      /** S3_BUCKET: must exist (the store never creates it). */
      readonly bucket: string;
      /** S3_ENDPOINT: an S3-compatible server's URL; null: AWS's own endpoint for the region. */
      readonly endpoint: string | null;
      /** S3_REGION (default us-east-1; what S3-compatible servers usually expect). */
      readonly region: string;
      /** S3_FORCE_PATH_STYLE=1: `endpoint/bucket/key` instead of `bucket.endpoint/key` (most S3-compatible servers). */
      readonly forcePathStyle: boolean;
    };

export function loadArtifactStoreSettings(env: NodeJS.ProcessEnv): ArtifactStoreSettings {
  const kind = (env.ARTIFACT_STORE ?? '').trim() || 'fs';
  if (kind === 'fs') return { kind: 'fs' };
  if (kind !== 's3')
    throw new ConfigurationError(`ARTIFACT_STORE must be "fs" or "s3", got "${kind}"`, { name: 'ARTIFACT_STORE' });
  const bucket = (env.S3_BUCKET ?? '').trim();
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw new ConfigurationError(
      bucket === ''
        ? 'ARTIFACT_STORE=s3 needs S3_BUCKET (an existing bucket)'
        : `S3_BUCKET "${bucket}" is not a bucket name (3-63 lower-case letters, digits, dots, hyphens)`,
      { name: 'S3_BUCKET' },
    );
  const endpoint = (env.S3_ENDPOINT ?? '').trim() || null;
  if (endpoint !== null && !/^https?:\/\/[^\s/]+/.test(endpoint))
    throw new ConfigurationError(`S3_ENDPOINT must be an http(s) URL, got "${endpoint}"`, { name: 'S3_ENDPOINT' });
  const rawPathStyle = (env.S3_FORCE_PATH_STYLE ?? '').trim().toLowerCase();
  if (!['', '0', '1', 'true', 'false'].includes(rawPathStyle))
    throw new ConfigurationError(`S3_FORCE_PATH_STYLE must be 1 or 0, got "${env.S3_FORCE_PATH_STYLE}"`, {
      name: 'S3_FORCE_PATH_STYLE',
    });
  return {
    kind: 's3',
    bucket,
    endpoint,
    region: (env.S3_REGION ?? '').trim() || 'us-east-1',
    forcePathStyle: rawPathStyle === '1' || rawPathStyle === 'true',
  };
}
