import * as fs from 'node:fs';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { S3Blobs } from './s3-blobs';

/** Copying an artifact store's blobs to and from local files, by storage key (what `agent backup` needs). */
export interface BlobCopier {
  describe(): string;
  /** Copies the blob to `file`; false when there is no such blob. */
  readTo(key: string, file: string): Promise<boolean>;
  /** Stores `file` (`size` bytes) as the blob `key`. */
  writeFrom(key: string, file: string, size: number): Promise<void>;
}

/** The filesystem store's blobs under `root` (AGENT_ARTIFACT_DIR). */
export function fsBlobCopier(root: string): BlobCopier {
  return {
    describe: () => `the artifact directory ${root}`,
    async readTo(key, file) {
      try {
        await fs.promises.copyFile(path.join(root, key), file);
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw e;
      }
    },
    async writeFrom(key, file) {
      const to = path.join(root, key);
      await fs.promises.mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
      await fs.promises.copyFile(file, to);
      await fs.promises.chmod(to, 0o600);
    },
  };
}

/** The S3 store's objects (ADR 0045): streamed to and from local files, multipart when large. */
export function s3BlobCopier(blobs: S3Blobs): BlobCopier {
  return {
    describe: () => blobs.describe(),
    async readTo(key, file) {
      const body = await blobs.read(key);
      if (!body) return false;
      await pipeline(body, fs.createWriteStream(file, { mode: 0o600 }));
      return true;
    },
    async writeFrom(key, file, size) {
      await blobs.putFile(key, file, size);
    },
  };
}
