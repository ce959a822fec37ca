import { execFile } from 'node:child_process';
import * as fs from 'node:fs';

/**
 * The workspace's filesystem quota (issue 28): each environment's workspace directory is its own
 * size-limited tmpfs (`size` = `workspaceBytes`, `nr_inodes` = `workspaceFiles` + its root), so a
 * writer gets ENOSPC at the quota from the kernel itself instead of being caught by a polling probe
 * after it overshot. Mounting needs CAP_SYS_ADMIN in the host's mount namespace (the service run as
 * root); elsewhere the adapters keep the probe and say so. The mount lives in the service's mount
 * namespace: `destroy` unmounts it, and a service that died leaves it for the next one's orphan sweep.
 */
export type QuotaMode = 'tmpfs' | 'probe';

const MOUNT = ['/usr/bin/mount', '/bin/mount'].find((p) => fs.existsSync(p)) ?? 'mount';
const UMOUNT = ['/usr/bin/umount', '/bin/umount'].find((p) => fs.existsSync(p)) ?? 'umount';

function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { env: {}, timeout: 10_000 }, (err, _o, stderr) =>
      err ? reject(new Error(`${file} ${args.join(' ')}: ${String(stderr || err.message).trim()}`)) : resolve(),
    ),
  );
}

/** Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN). */
export function canMountQuota(effectiveCaps: bigint): boolean {
  return process.getuid?.() === 0 && (effectiveCaps & (1n << 21n)) !== 0n;
}

/** Creates `dir` as a tmpfs of `bytes` and `files` inodes owned by `owner` (mode 0700). */
export async function mountWorkspace(
  dir: string,
  quota: { bytes: number; files: number },
  owner: { uid: number; gid: number },
): Promise<void> {
  await fs.promises.mkdir(dir, { mode: 0o700 });
  const opts = [
    `size=${quota.bytes}`,
    `nr_inodes=${quota.files + 1}`,
    'mode=0700',
    `uid=${owner.uid}`,
    `gid=${owner.gid}`,
    'nosuid',
    'nodev',
  ].join(',');
  try {
    await run(MOUNT, ['-t', 'tmpfs', '-o', opts, 'agent-sandbox-workspace', dir]);
  } catch (e) {
    await fs.promises.rmdir(dir).catch(() => undefined);
    throw e;
  }
}

/** Unmounts a workspace tmpfs (lazily: a process that outlived its sandbox cannot keep it). */
export async function unmountWorkspace(dir: string): Promise<void> {
  if (!(await isMountPoint(dir))) return;
  await run(UMOUNT, ['--lazy', dir]).catch(() => undefined);
}

/** Whether `dir` is a mount point (its device differs from its parent's). */
export async function isMountPoint(dir: string): Promise<boolean> {
  try {
    const [a, b] = await Promise.all([fs.promises.stat(dir), fs.promises.stat(`${dir}/..`)]);
    return a.dev !== b.dev;
  } catch {
    return false;
  }
}
