import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Settings } from '../../config/settings';
import { s3BlobsOf } from '../artifact-store';
import { fail, messageOf, pass, type CheckResult } from './check';

const NAME = 'artifact store';

/**
 * The artifact store can be written: the directory (ARTIFACT_STORE=fs) or, with ARTIFACT_STORE=s3, the
 * bucket exists, the credentials are accepted, and a probe object can be stored and deleted (ADR 0045).
 * The credentials themselves are never shown.
 */
export async function checkArtifactStore(settings: Settings): Promise<CheckResult> {
  const s3 = s3BlobsOf(settings);
  if (!s3) {
    // Inside the data directory (the default), the data-directory line already reports a problem once.
    const inside = !path.relative(settings.dataDir, settings.artifactDir).startsWith('..');
    return inside
      ? pass(NAME, `filesystem ${settings.artifactDir} (in the data directory)`)
      : checkArtifactDir(settings.artifactDir);
  }
  const probe = `agent-doctor/probe-${process.pid}-${Date.now()}`;
  try {
    await s3.checkBucket();
    await s3.putBytes(probe, Buffer.from('agent doctor probe'));
    await s3.delete(probe);
    return pass(NAME, `${s3.describe()}: bucket reachable, write and delete allowed`);
  } catch (e) {
    return fail(
      NAME,
      messageOf(e),
      'create the bucket (S3_BUCKET), point S3_ENDPOINT/S3_REGION at the store (S3_FORCE_PATH_STYLE=1 for most S3-compatible servers), and give the SDK credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE',
    );
  } finally {
    s3.close();
  }
}

function checkArtifactDir(dir: string): CheckResult {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const probe = path.join(dir, `.doctor-${process.pid}`);
    fs.writeFileSync(probe, 'ok');
    fs.rmSync(probe);
    return pass(NAME, `filesystem ${dir} (writable)`);
  } catch (e) {
    return fail(
      NAME,
      `${dir} is not writable (${messageOf(e)})`,
      'set AGENT_ARTIFACT_DIR to a directory this user can write (a shared mount when several hosts run), or ARTIFACT_STORE=s3',
    );
  }
}
