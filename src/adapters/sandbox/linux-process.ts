import * as fs from 'node:fs';
import { constants as osConstants } from 'node:os';

/**
 * `unshare(2)` and `setns(2)` of network namespaces from the service itself (ADR 0018), through
 * koffi (a maintained FFI with prebuilt binaries; Node has neither call). An environment's namespace
 * is made by the calling thread moving into a new one and straight back, keeping a descriptor (what
 * `unshare --net` did, without a process); each command's bubblewrap is forked from a thread moved
 * into it around one synchronous `spawn()` (one exec fewer than an `unshare … -- bwrap` launcher). A network
 * namespace is per thread (allowed in a multi-threaded process, unlike a user or mount namespace),
 * and nothing else runs on the thread between the two moves.
 *
 * `loadLinuxProcessControls()` returns null where koffi or libc cannot be loaded (another libc, an
 * unsupported platform); the adapter then runs an `unshare` launcher per command.
 */
export interface LinuxProcessControls {
  /**
   * Makes a network namespace (`unshare(2)` of the calling thread, then straight back) and returns a
   * descriptor of it: what `unshare --net` did, without a process. Throws (closing it) if the
   * descriptor names the service's own namespace.
   */
  newNetworkNamespace(): number;
  /**
   * Runs `fn` (synchronously) with the calling thread in the network namespace open as `nsFd`, and
   * moves the thread back before returning or throwing. Throws if the first move fails; if the move
   * back fails the process cannot trust its own namespace any more and exits.
   */
  inNetworkNamespace<T>(nsFd: number, fn: () => T): T;
}

const CLONE_NEWNET = 0x40000000;
const ERRNO_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(osConstants.errno).map(([name, n]) => [n, name]),
);

interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => number };
  errno(): number;
}

let cached: LinuxProcessControls | null | undefined;

export function loadLinuxProcessControls(): LinuxProcessControls | null {
  if (cached !== undefined) return cached;
  cached = null;
  if (process.platform !== 'linux') return null;
  let koffi: Koffi;
  let setns: (fd: number, nstype: number) => number;
  let unshare: (flags: number) => number;
  let ownNet: number;
  let ownNetInode: number;
  try {
    // Loaded here, not imported: only the namespace adapter needs the native module, and where it
    // cannot load the adapter still works.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    koffi = require('koffi') as Koffi;
    const libc = koffi.load('libc.so.6');
    setns = libc.func('int setns(int fd, int nstype)');
    unshare = libc.func('int unshare(int flags)');
    ownNet = fs.openSync('/proc/self/ns/net', fs.constants.O_RDONLY);
    ownNetInode = fs.fstatSync(ownNet).ino;
  } catch {
    return null;
  }
  const failure = () => {
    const n = koffi.errno();
    return ERRNO_NAMES[n] ?? `errno ${n}`;
  };
  const back = () => {
    if (setns(ownNet, CLONE_NEWNET) !== 0) {
      // Every later socket and child of this thread would start in a sandbox's namespace.
      process.stderr.write(`agent sandboxd: setns back to its own network namespace failed (${failure()}); exiting\n`);
      process.exit(70);
    }
  };
  const controls: LinuxProcessControls = {
    newNetworkNamespace(): number {
      if (unshare(CLONE_NEWNET) !== 0) throw new Error(`unshare of a network namespace failed (${failure()})`);
      let fd: number;
      try {
        fd = fs.openSync('/proc/thread-self/ns/net', fs.constants.O_RDONLY);
      } finally {
        back();
      }
      if (fs.fstatSync(fd).ino === ownNetInode) {
        fs.closeSync(fd);
        throw new Error("the new network namespace is the service's own");
      }
      return fd;
    },
    inNetworkNamespace<T>(nsFd: number, fn: () => T): T {
      if (setns(nsFd, CLONE_NEWNET) !== 0)
        throw new Error(`setns into the environment's network namespace failed (${failure()})`);
      try {
        return fn();
      } finally {
        back();
      }
    },
  };
  cached = controls;
  return controls;
}
