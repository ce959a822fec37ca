import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * What the namespace and gVisor adapters' sandboxes are built from: the in-sandbox identity, the
 * `/etc` entries a program needs, the host's top-level links, the devices and the mountpoints of
 * the prepared read-only base root (base-etc.ts makes it; each adapter mounts it at `/`).
 */

/**
 * In-sandbox root of the sandbox's own user namespace, mapped to an unprivileged host uid, with no
 * capability at all (`--cap-drop ALL`).
 */
export const SANDBOX_UID = 0;
export const SANDBOX_GID = 0;
export const BASE_PATH = '/usr/local/bin:/usr/bin:/bin';
/** Top-level host entries mirrored in the base root: a link as the same link, a directory bound read-only. */
export const TOP_LEVEL = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];
/** The sandbox's devices (those of bubblewrap's `--dev`), with the device numbers a copy must have. */
export const DEVICES: ReadonlyArray<readonly [string, number, number]> = [
  ['null', 1, 3],
  ['zero', 1, 5],
  ['full', 1, 7],
  ['random', 1, 8],
  ['urandom', 1, 9],
  ['tty', 5, 0],
];
export const DEV_LINKS: ReadonlyArray<readonly [string, string]> = [
  ['fd', '/proc/self/fd'],
  ['stdin', '/proc/self/fd/0'],
  ['stdout', '/proc/self/fd/1'],
  ['stderr', '/proc/self/fd/2'],
];
export const PASSWD = `sandbox:x:${SANDBOX_UID}:${SANDBOX_GID}:sandbox (no capabilities, unprivileged on the host):/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`;
export const GROUP = `sandbox:x:${SANDBOX_GID}:\nnogroup:x:65534:\n`;

/**
 * Entries of /etc a program needs to load and run; nothing that names a secret. The sandbox gets a
 * copy of them (with the synthetic passwd/group) in one read-only bind at /etc (base-etc.ts).
 */
export const ETC_FILES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'localtime',
  'nsswitch.conf',
  'mime.types',
  'ssl/certs',
  'ssl/openssl.cnf',
  'debian_version',
  'os-release',
];

/** Where a command's tool bridge socket appears inside the sandbox (plan §8.5). */
export const BRIDGE_MOUNT = '/run/agent/bridge.sock';

/** Empty mountpoints of the base root, and the bridge socket's (an empty file a socket is bound onto). */
export async function makeMountpoints(dir: string): Promise<void> {
  for (const m of ['usr', 'proc', 'tmp', 'workspace', 'dev', 'dev/shm', 'run', 'run/agent'])
    await fs.promises.mkdir(path.join(dir, m), { mode: 0o755 });
  await fs.promises.writeFile(path.join(dir, BRIDGE_MOUNT.slice(1)), '', { mode: 0o644, flag: 'wx' });
}

/** Mirrors the host's top-level links; returns the real top-level directories to bind read-only. */
export async function mirrorTopLevel(dir: string): Promise<string[]> {
  const roBinds: string[] = [];
  for (const top of TOP_LEVEL) {
    const st = await fs.promises.lstat(`/${top}`).catch(() => null);
    if (!st) continue;
    if (st.isSymbolicLink()) await fs.promises.symlink(await fs.promises.readlink(`/${top}`), path.join(dir, top));
    else if (st.isDirectory()) {
      await fs.promises.mkdir(path.join(dir, top), { mode: 0o755 });
      roBinds.push(`/${top}`);
    }
  }
  return roBinds;
}

/** A top-level entry turning from a link into a directory (or back) changes the layout. */
export function topLevelSignature(): string {
  return TOP_LEVEL.map((t) => {
    const st = fs.lstatSync(`/${t}`, { throwIfNoEntry: false });
    return st ? `${t}:${st.mode}:${st.ino}` : `${t}:-`;
  }).join(',');
}
